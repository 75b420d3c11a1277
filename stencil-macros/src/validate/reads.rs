//! Reads of fields, `u[-1, 0]`, and the call syntax `u(-1, 0)` that people write for them.

use syn::Ident;

use super::lower::{Lowering, poisoned};
use super::signature::Name;
use crate::ast;
use crate::diagnose::{self, constant_int, read_at_point, read_text, relative_offset};
use crate::ir::{self, ExprKind, MAX_RADIUS, Method, Ty};
use crate::span::Range;

impl Lowering<'_> {
    /// `name[offsets]`.
    pub(super) fn read(&mut self, name: &Ident, offsets: &[ast::Expr], range: Range, brackets: Range) -> ir::Expr {
        let span = name.span();
        let field = match self.sig.names.get(&name.to_string()).copied() {
            Some(Name::Field(f)) => f,
            Some(Name::Scalar(_)) => {
                self.cx.error(range, format!("`{name}` is a scalar and cannot be indexed: write `{name}` alone"));
                return poisoned(Ty::Real, span);
            }
            Some(Name::Local(_)) => {
                self.cx.error(
                    range,
                    format!("`{name}` is a `let` binding, a single value, and cannot be indexed: write `{name}` alone"),
                );
                return poisoned(Ty::Real, span);
            }
            Some(Name::Invalid(_)) => return poisoned(Ty::Real, span),
            None => {
                self.unknown_name(name);
                return poisoned(Ty::Real, span);
            }
        };
        // A field whose dimension differs from the stencil's was reported at its
        // declaration; its reads are checked against what it declares.
        let dim = self.sig.field_dims[field];
        let offset = self.offsets(name, dim, offsets);
        let mut ok = offset.is_some();
        if offsets.len() != dim {
            let axes = if dim == 1 {
                "1 axis, so it is read with 1 offset".to_string()
            } else {
                format!("{dim} axes, so it is read with {dim} offsets")
            };
            let example = read_at_point(name, dim);
            self.cx.error(brackets, format!("`{name}` has {axes}, e.g. `{example}`; found {}", offsets.len()));
            ok = false;
        }
        let (Some(offset), true, true) = (offset, ok, dim == self.sig.dim) else {
            return poisoned(Ty::Real, span);
        };
        let read = ir::Read { field, offset };
        let slot = self.reads.iter().position(|r| *r == read).unwrap_or_else(|| {
            self.reads.push(read);
            self.reads.len() - 1
        });
        ir::Expr { kind: ExprKind::Read(slot), ty: Ty::Real, span }
    }

    /// The constant offsets of a read of `name`, a field of `dim` axes; `None` once an error
    /// was reported.
    fn offsets(&mut self, name: &Ident, dim: usize, offsets: &[ast::Expr]) -> Option<Vec<i32>> {
        // Grid indices written as offsets (`u[i - 1, j]`) are one mistake, reported once for
        // the read with the offsets they mean.
        let names = &self.sig.names;
        let is_index = |n: &Ident| !names.contains_key(&n.to_string());
        let indices: Vec<Range> = offsets
            .iter()
            .filter(|o| constant_int(o).is_none() && diagnose::mentions(o, &is_index))
            .map(ast::Expr::range)
            .collect();
        if let (Some(first), Some(last)) = (indices.first(), indices.last()) {
            let meant: Option<Vec<i64>> = offsets.iter().map(|o| relative_offset(o, &is_index)).collect();
            let example = match meant {
                Some(m) if m.len() == dim => format!("write `{}`", read_text(name, &m)),
                _ => {
                    let mut before = vec![0; dim];
                    before[0] = -1;
                    format!(
                        "`{}` is the point itself and `{}` the point before it on the first axis",
                        read_at_point(name, dim),
                        read_text(name, &before)
                    )
                }
            };
            self.cx.error(
                first.to(*last),
                format!(
                    "offsets are constant integers relative to the point being updated, not grid indices: {example}"
                ),
            );
            return None;
        }
        let mut result = Some(Vec::new());
        for o in offsets {
            match constant_int(o) {
                Some(v) if v.unsigned_abs() as usize > MAX_RADIUS => {
                    self.cx.error(
                        o.range(),
                        format!("offset {v} is beyond the largest supported radius, {MAX_RADIUS}: keep every offset within -{MAX_RADIUS}..={MAX_RADIUS}"),
                    );
                    result = None;
                }
                Some(v) => {
                    if let Some(r) = &mut result {
                        r.push(v as i32);
                    }
                }
                // Reported with its own message.
                None if matches!(o, ast::Expr::Unsupported { .. } | ast::Expr::Mistake { .. }) => {
                    self.expr(o);
                    result = None;
                }
                None => {
                    self.cx.error(
                        o.range(),
                        "an offset must be an integer constant such as `-1`, `0` or `2`: fields are read at fixed offsets from the point",
                    );
                    result = None;
                }
            }
        }
        result
    }

    /// The message for `name(args)`: a field read with parentheses, a value called, a
    /// method called as a function, or a function the language does not have; `None` when
    /// `name`'s declaration was reported already.
    pub(super) fn call(&self, name: &Ident, args: &[ast::Expr]) -> Option<String> {
        Some(match self.sig.names.get(&name.to_string()) {
            Some(Name::Invalid(_)) => return None,
            Some(Name::Field(f)) => {
                let dim = self.sig.field_dims[*f];
                let is_index = |n: &Ident| !self.sig.names.contains_key(&n.to_string());
                let meant: Option<Vec<i64>> = args.iter().map(|a| relative_offset(a, &is_index)).collect();
                let example = match meant {
                    Some(m) if m.len() == dim => read_text(name, &m),
                    _ => read_at_point(name, dim),
                };
                format!("`{name}` is a field, read at offsets in square brackets: write `{example}`")
            }
            Some(_) => {
                format!("`{name}` is a value, not a function: write `{name}` alone, or `{name} * (…)` for a product")
            }
            None => {
                let hint = match (Method::from_name(&name.to_string()), diagnose::method_hint(&name.to_string())) {
                    (Some(m), _) => format!("call it as a method on its first argument: `{}`", m.example()),
                    (None, Some(h)) => format!("a stencil has no functions; {h}"),
                    (None, None) => {
                        "a stencil has no functions; write the expression out, or bind a value with `let`".to_string()
                    }
                };
                format!("a function call (`{name}(…)`) is not supported in a stencil: {hint}")
            }
        })
    }
}
