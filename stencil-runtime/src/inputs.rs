//! What a run is given besides the unknown: the read-only fields, found by name, and the
//! scalar parameters, typed or by name; each checked against the stencil.

use std::collections::HashSet;

use crate::{Error, Grid, Real, Result, Stencil};

/// A stencil's scalar parameters from the typed struct (`typed`; `twice` when it was given
/// more than once) or by name (`named`), checked: each value given once.
pub(crate) fn resolve_params<S: Stencil<N>, T: Real, const N: usize>(
    typed: Option<S::Params<T>>,
    twice: bool,
    named: &[(String, f64)],
) -> Result<S::Params<T>> {
    let named: Vec<(&str, f64)> = named.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    check_unique(named.iter().map(|(n, _)| *n))?;
    let meta = S::META;
    match (typed, named.first()) {
        (Some(_), _) if twice => Err(Error::ParametersGivenTwice {
            what: "the parameters".into(),
            how: "`.params(…)` was called twice".into(),
        }),
        (Some(p), None) => Ok(p),
        (Some(_), Some(&(name, _))) => match meta.params.iter().any(|q| q.name == name) {
            true => Err(Error::ParametersGivenTwice {
                what: format!("parameter `{name}`"),
                how: format!("by `.params(…)` and by `.param(\"{name}\", …)`"),
            }),
            false => Err(Error::UnknownParameter {
                stencil: meta.name,
                name: name.into(),
                known: list(meta.params.iter().map(|q| q.name)),
            }),
        },
        (None, _) => S::params_from_values::<T>(&named),
    }
}

/// The read-only fields of stencil `S` in declaration order (`None` at the unknown), found
/// by name among `inputs` and checked against the grid's `shape`.
pub(crate) fn resolve_inputs<'a, S: Stencil<N>, T: Real, const N: usize>(
    inputs: &[(String, &'a Grid<T, N>)],
    shape: [usize; N],
) -> Result<Vec<Option<&'a [T]>>> {
    let meta = S::META;
    check_unique(inputs.iter().map(|(n, _)| n.as_str()))?;
    let mut resolved: Vec<Option<&'a [T]>> = vec![None; meta.fields.len()];
    for (name, grid) in inputs {
        let index = meta.field_index(name).ok_or_else(|| Error::UnknownField {
            stencil: meta.name,
            field: name.clone(),
            known: list(meta.fields.iter().filter(|f| !f.unknown).map(|f| f.name)),
        })?;
        if meta.fields[index].unknown {
            return Err(Error::UnknownGivenAsInput { stencil: meta.name, field: name.clone() });
        }
        if grid.shape() != shape {
            return Err(Error::ShapeMismatch {
                field: name.clone(),
                expected: shape.to_vec(),
                found: grid.shape().to_vec(),
            });
        }
        resolved[index] = Some(grid.as_slice());
    }
    for (index, field) in meta.fields.iter().enumerate() {
        if !field.unknown && resolved[index].is_none() {
            return Err(Error::MissingField { stencil: meta.name, field: field.name.into() });
        }
    }
    Ok(resolved)
}

fn check_unique<'n>(names: impl Iterator<Item = &'n str>) -> Result<()> {
    let mut seen = HashSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(Error::Duplicate { name: name.into() });
        }
    }
    Ok(())
}

/// `a`, `b`, `c` — or "none".
pub(crate) fn list<'n>(names: impl Iterator<Item = &'n str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    if names.is_empty() { "none".into() } else { names.join(", ") }
}
