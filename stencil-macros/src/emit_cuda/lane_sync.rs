//! The lane kernel's synchronisation: the tagged words a value passes in between blocks
//! (through global memory) and from the receiver to the compute warp (through a ring in
//! shared memory), the wait on them, the asynchronous copies and the helpers' meeting.

use crate::writer::Writer;

/// The hand-over between blocks, the asynchronous copies and a lane select. Compute
/// capability 8.0 on.
pub(super) fn lanes_helpers(w: &mut Writer) {
    w.line("#ifndef LN_HELPERS");
    w.line("#define LN_HELPERS");
    w.open("__device__ __forceinline__ unsigned ln_smem(const void* p)");
    w.line("return (unsigned)__cvta_generic_to_shared(p);");
    w.close("");
    w.line("// Words of the hand-over per value, and a value's put and get: each word holds 32 bits of the value and");
    w.line(
        "// its tag, and is stored and loaded whole, so a word read with the expected tag holds the bits written with",
    );
    w.line("// it; no fence orders the value and a flag, and the next block sees each value once it lands in L2.");
    w.line("#define LN_LLW (sizeof(real) / 4)");
    emit_tagged_words(w);
    w.line("// An asynchronous copy of one value from global into shared memory, the end of a group of them, the wait");
    w.line("// for all groups but the last, and for all.");
    w.open("__device__ __forceinline__ void ln_copy(real* dst, const real* src)");
    w.line("// L2 fetches whole 128-byte lines (a row's values for the neighbouring warps too): measured 1 % faster.");
    w.line("asm volatile(\"cp.async.ca.shared.global.L2::128B [%0], [%1], %2;\" ::\"r\"(ln_smem(dst)), \"l\"(src), \"n\"(sizeof(real)) : \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void ln_copy_commit()");
    w.line("asm volatile(\"cp.async.commit_group;\" ::: \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void ln_copy_wait_prior()");
    w.line("asm volatile(\"cp.async.wait_group 1;\" ::: \"memory\");");
    w.close("");
    w.open("__device__ __forceinline__ void ln_copy_wait_all()");
    w.line("asm volatile(\"cp.async.wait_all;\" ::: \"memory\");");
    w.close("");
    w.line(
        "// The meeting of the compute warp, the loader, the storer and fast mode's parts warp (the receiver keeps to",
    );
    w.line("// itself). Not `bar.sync` (`barrier.sync.aligned`): a warp may come to it not yet reconverged after its");
    w.line("// lanes' own branches, which the aligned form does not allow (compute-sanitizer's synccheck reports it).");
    w.open("__device__ __forceinline__ void ln_meet()");
    w.line("asm volatile(\"barrier.sync 1, %0;\" ::\"n\"(LN_MEET) : \"memory\");");
    w.close("");
    w.line(
        "// A row of the line before in the block's ring, as its LN_LLW tagged words, put by the receiver and taken",
    );
    w.line("// by the compute warp. The puts are atomic and the loads volatile, so a load that meets a put is no data");
    w.line("// race (both are strong operations in the memory model; a plain store would make it one, and the race");
    w.line("// check reports it).");
    w.open("__device__ __forceinline__ void ln_edge_put(unsigned long long* p, const real v, const unsigned tag)");
    w.line("const ln_word w = ln_pack(v, tag);");
    w.line("atomicExch(p, w.a);");
    w.line("if (sizeof(real) == 8) atomicExch(p + 1, w.b);");
    w.close("");
    w.open("__device__ __forceinline__ ln_word ln_edge_load(const unsigned long long* p)");
    w.line("ln_word w;");
    w.line("if (sizeof(real) == 4) w.a = w.b = *(const volatile unsigned long long*)p;");
    w.line("else asm volatile(\"ld.volatile.shared.v2.u64 {%0, %1}, [%2];\" : \"=l\"(w.a), \"=l\"(w.b) : \"r\"(ln_smem(p)));");
    w.line("return w;");
    w.close("");
    w.line("// The wait for each size of check (the kernel's array of words picks one).");
    emit_edge_wait(w, CHECK_SINGLE_EXACT);
    emit_edge_wait(w, CHECK);
    w.line("// Both operands evaluated by every lane (one is a shuffle), then one chosen.");
    w.open("__device__ __forceinline__ real ln_pick(const bool first, const real a, const real b)");
    w.line("return first ? a : b;");
    w.close("");
    w.line("#endif");
}

/// A value's tagged words: packed, unpacked, checked, and stored to and loaded from the
/// hand-over in global memory.
fn emit_tagged_words(w: &mut Writer) {
    w.line("// A value's LN_LLW tagged words (the second is the first again in single precision), and the value back.");
    w.line("struct ln_word { unsigned long long a, b; };");
    w.open("__device__ __forceinline__ ln_word ln_pack(const real v, const unsigned tag)");
    w.line("unsigned long long bits = 0;");
    w.line("memcpy(&bits, &v, sizeof(real));");
    w.line("const unsigned long long t = (unsigned long long)tag << 32;");
    w.line("const unsigned long long a = t | (bits & 0xffffffffull);");
    w.line("return {a, sizeof(real) == 4 ? a : t | (bits >> 32)};");
    w.close("");
    w.open("__device__ __forceinline__ real ln_word_value(const ln_word w)");
    w.line("const unsigned long long bits = (w.a & 0xffffffffull) | (w.b << 32);");
    w.line("real v;");
    w.line("memcpy(&v, &bits, sizeof(real));");
    w.line("return v;");
    w.close("");
    w.open("__device__ __forceinline__ bool ln_word_has(const ln_word w, const unsigned tag)");
    w.line("return (unsigned)(w.a >> 32) == tag && (unsigned)(w.b >> 32) == tag;");
    w.close("");
    w.open("__device__ __forceinline__ void ln_ll_put(unsigned long long* p, const real v, const unsigned tag)");
    w.line("const ln_word w = ln_pack(v, tag);");
    w.line("if (sizeof(real) == 4) asm volatile(\"st.relaxed.gpu.global.b64 [%0], %1;\" ::\"l\"(p), \"l\"(w.a) : \"memory\");");
    w.line("else asm volatile(\"st.relaxed.gpu.global.v2.b64 [%0], {%1, %2};\" ::\"l\"(p), \"l\"(w.a), \"l\"(w.b) : \"memory\");");
    w.close("");
    w.line("// The value of tag `tag` at p into *v, or false while it has not arrived.");
    w.open("__device__ __forceinline__ bool ln_ll_get(const unsigned long long* p, const unsigned tag, real* v)");
    w.line("ln_word w;");
    w.open("if (sizeof(real) == 4)");
    w.line("asm volatile(\"ld.relaxed.gpu.global.b64 %0, [%1];\" : \"=l\"(w.a) : \"l\"(p) : \"memory\");");
    w.line("w.b = w.a;");
    w.close("");
    w.line("else asm volatile(\"ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];\" : \"=l\"(w.a), \"=l\"(w.b) : \"l\"(p) : \"memory\");");
    w.line("if (!ln_word_has(w, tag)) return false;");
    w.line("*v = ln_word_value(w);");
    w.line("return true;");
    w.close("");
}

/// Rows of the line before the compute warp checks at once: each check is a branch, each row
/// of it a step more between blocks. Single precision in exact mode checks 2, the rest 4
/// (measured, ms a step at 3600 × 1800, checks of 1 / 2 / 4 / 8 rows: f32 exact 1.084 / 0.992 /
/// 1.019 / 1.100, f32 fast 0.902 / 0.856 / 0.833 / 0.901, f64 exact 1.572 / 1.477 / 1.455 / 1.469).
pub(super) const CHECK_SINGLE_EXACT: usize = 2;
pub(super) const CHECK: usize = 4;

/// `ln_edge_wait(words, edge, t, rows)`, for checks of `check` rows: until the words of rows
/// t … t + check − 1 (the first `rows` of them) carry their tags, load them again. Whether they
/// do is worked out before the check from words loaded steps earlier, so the check itself is
/// one test and a branch that is not taken; the loop is in assembly, with no reconvergence point
/// for the compiler to place in each step (every lane loads the same words, so its branches are
/// uniform). The kernel's array of words has `check` of them, which picks this overload.
fn emit_edge_wait(w: &mut Writer, check: usize) {
    w.open(format!("__device__ __forceinline__ void ln_edge_wait(ln_word (&x)[{check}], const unsigned long long* edge, const int t, const int rows)"));
    w.line(format!("unsigned missing = 0, at[{check}];"));
    w.line("#pragma unroll");
    w.open(format!("for (int i = 0; i < {check}; ++i)"));
    w.line("const unsigned tag = (unsigned)(t + 1 + i);");
    w.line("const unsigned off = ((unsigned)(x[i].a >> 32) ^ tag) | (sizeof(real) == 8 ? (unsigned)(x[i].b >> 32) ^ tag : 0u);");
    w.line("missing |= i < rows ? off : 0u;");
    w.line("at[i] = ln_smem(&edge[((t + i) & (LN_EDGE - 1)) * LN_LLW]);");
    w.close("");
    for double in [false, true] {
        let words = if double { 2 } else { 1 };
        let (tag, rows, missing) = (words * check + check, words * check + check + 1, words * check + check + 2);
        let mut body =
            format!("{{ .reg .pred p, q, m; .reg .b32 lo, hi, tg; setp.eq.u32 m, %{missing}, 0; @m bra.uni D%=; W%=: ");
        for i in 0..check {
            if double {
                body += &format!("ld.volatile.shared.v2.u64 {{%{}, %{}}}, [%{}]; ", 2 * i, 2 * i + 1, 2 * check + i);
            } else {
                body += &format!("ld.volatile.shared.u64 %{}, [%{}]; ", i, check + i);
            }
        }
        body += &format!("setp.ne.u32 m, %{tag}, %{tag}; ");
        for i in 0..check {
            body += &format!("add.u32 tg, %{tag}, {one}; setp.gt.s32 q, %{rows}, {i}; ", one = i + 1);
            for k in 0..words {
                body += &format!(
                    "mov.b64 {{lo, hi}}, %{o}; setp.ne.and.u32 p, hi, tg, q; or.pred m, m, p; ",
                    o = words * i + k
                );
            }
        }
        body += "@m bra.uni W%=; D%=: }";
        let outs: Vec<String> = (0..check)
            .flat_map(|i| (0..words).map(move |k| format!("\"+l\"(x[{i}].{})", if k == 0 { "a" } else { "b" })))
            .collect();
        let ins: Vec<String> = (0..check).map(|i| format!("\"r\"(at[{i}])")).collect();
        let cond = if double { "if (sizeof(real) == 8)" } else { "if (sizeof(real) == 4)" };
        w.line(format!(
            "{cond} asm volatile(\"{body}\" : {} : {}, \"r\"((unsigned)t), \"r\"(rows), \"r\"(missing));",
            outs.join(", "),
            ins.join(", ")
        ));
    }
    w.close("");
}
