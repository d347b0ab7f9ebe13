"""Inline PTX (`asm` statements) -> calls into the emu runtime (emu_tensor.h).

An `asm [volatile] ("template" : outputs : inputs : clobbers)` whose template
is string literals is parsed, its `%N` operands resolved (outputs first, then
inputs, as GCC and nvcc number them) and each instruction rewritten. The
instructions emu executes:

* one float32 special-function instruction, `OP.approx[.ftz].f32 %0, %1` with
  "=f"/"f" operands (MUFU_PTX), as the accurate host function;
* `mma.sync.aligned.{m16n8k8,m16n8k16}.row.col.f32.{f16,bf16}.{f16,bf16}.f32`
  and `mma.sync.aligned.{m16n8k4,m16n8k8}.row.col.f32.tf32.tf32.f32`;
* `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared[::cta].b16`;
* `cvt.rna.tf32.f32` (float32 -> tf32 bits, as wmma::__float_to_tf32);
* global loads and stores with a memory-order qualifier, as decoupled
  look-backs publish and poll status words:
  `ld[.volatile|.relaxed.S|.acquire.S].global[.ca|.cg|.cs|.lu|.cv][.v2|.v4].T`
  and `st[.volatile|.relaxed.S|.release.S].global[.wb|.cg|.cs|.wt][.v2|.v4].T`
  (S a scope, T one of b/u/s/f 32/64, at most 16 bytes). Blocks and their
  threads take turns on emu, so each is a plain access of the natural
  alignment the PTX ISA requires (checked);
* `cp.async.{ca,cg}.shared[::cta].global[.L2::{64,128,256}B] [dst], [src], size[, src_size]`,
  `cp.async.commit_group`, `cp.async.wait_group N`, `cp.async.wait_all`;
* the cache hints `prefetch{.global,.local}.{L1,L2}`,
  `prefetch.global.L2::evict_{last,normal}`, `prefetchu.L1` and
  `cp.async.bulk.prefetch.L2.global[.L2::cache_hint]`: nothing a program can
  see, so nothing is done beyond the bulk form's alignment rules;
* `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}` and
  `wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32` (N a multiple of 8 up
  to 256) with A from a matrix descriptor or from registers,
  `wgmma.fence.sync.aligned`, `wgmma.commit_group.sync.aligned`,
  `wgmma.wait_group.sync.aligned N`, `fence.proxy.async[.shared::cta]`;
* named barriers, as warp-specialized kernels hand work between warps:
  `bar.sync a[, b]`, `bar.arrive a, b` and their `barrier[.cta].{sync,arrive}[.aligned]`
  spellings (a in 0..15; b a multiple of 32, the threads a phase needs, every
  warp of the block when left out; warps are counted, 32 threads each);
* `griddepcontrol.wait` and `griddepcontrol.launch_dependents` (programmatic
  dependent launch): nothing to do, the launch before has finished on emu;
* a `{ ... }` scope, `.reg .pred P` and `setp.{eq,ne}.{b32,s32,u32} P, a, b`
  (how wgmma's scale-d predicate is written);
* 32-bit extended-precision arithmetic: `add.cc`, `addc[.cc]`, `sub.cc`,
  `subc[.cc]` on `.u32`/`.s32` registers, with one carry flag per asm
  statement (the PTX ISA keeps CC.CF only within straight-line code). As on
  an H200, a subtraction is a + ~b + 1 (subc: a + ~b + CF) and leaves the
  carry of that sum, 1 when nothing was borrowed: subc chains subtract
  correctly, and an addc after a sub.cc adds the inverse of the borrow.

The statement becomes one immediately-invoked lambda on its first line (the
newlines it spanned follow it, so line numbers stay put). Any other
instruction raises UnsupportedFeature naming it; an asm whose template is not
plain string literals is left for translate.check_supported to refuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import UnsupportedFeature

# The special-function unit's float32 instructions, as inline PTX writes them
# (`.approx`, optional `.ftz`): the host function each one becomes.
MUFU_PTX = {
    "ex2": "exp2f", "lg2": "log2f", "sin": "sinf", "cos": "cosf", "tanh": "tanhf",
    "rcp": "1.0f / ", "sqrt": "sqrtf", "rsqrt": "1.0f / sqrtf",
}

ASM_START = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile\b|__volatile__\b)?\s*(?:goto\s*)?\(")

_MUFU = re.compile(r"(?P<op>\w+)\.approx(?:\.ftz)?\.f32")
_MMA = re.compile(r"mma\.sync\.aligned\.m16n8k(?P<k>4|8|16)\.row\.col\.f32\.(?P<a>f16|bf16|tf32)\.(?P<b>f16|bf16|tf32)\.f32")
_LDMATRIX = re.compile(r"ldmatrix\.sync\.aligned\.m8n8\.x(?P<n>1|2|4)(?P<trans>\.trans)?\.shared(?:::cta)?\.b16")
_CP_ASYNC = re.compile(r"cp\.async\.(?P<level>ca|cg)\.shared(?:::cta)?\.global(?:\.L2::(?:64|128|256)B)?")
_PREFETCH = re.compile(r"prefetch(?:\.global|\.local)?\.L[12]|prefetch\.global\.L2::evict_(?:last|normal)|prefetchu\.L1")
_BULK_PREFETCH = re.compile(r"cp\.async\.bulk\.prefetch\.L2\.global(?P<hint>\.L2::cache_hint)?")
_GLOBAL_ACCESS = re.compile(
    r"(?P<op>ld|st)(?P<sem>\.volatile|\.weak|\.(?P<order>relaxed|acquire|release)\.(?:cta|cluster|gpu|sys))?"
    r"\.global(?P<cache>\.(?:ca|cg|cs|lu|cv|wb|wt))?(?:\.v(?P<vec>2|4))?\.(?P<type>[bsu](?:32|64)|f(?:32|64))")
# what each side of an access may carry: loads acquire, stores release
_ACCESS_ORDERS = {"ld": {None, "relaxed", "acquire"}, "st": {None, "relaxed", "release"}}
_ACCESS_CACHE = {"ld": {None, ".ca", ".cg", ".cs", ".lu", ".cv"}, "st": {None, ".wb", ".cg", ".cs", ".wt"}}
# register constraints that hold a value of each width
_WIDTH_CONSTRAINTS = {4: ("r", "f"), 8: ("l", "d")}
_WGMMA = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n(?P<n>\d+)k(?P<k>16|8)\.f32\.(?P<a>f16|bf16|tf32)\.(?P<b>f16|bf16|tf32)")
_BARRIER = re.compile(r"(?:bar(?:\.cta)?|barrier(?:\.cta)?)\.(?P<op>sync|arrive)(?:\.aligned)?")
_PRED_DECL = re.compile(r"\.reg\s+\.pred\s+(?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)")
_SETP = re.compile(r"setp\.(?P<cmp>eq|ne)\.(?:b32|s32|u32)")
_CARRY = re.compile(r"(?P<op>add|sub)(?P<c>c)?(?P<cc>\.cc)?\.[us]32")
CARRY_FLAG = "__emu_carry"
_MMA_TYPES = {"f16": "F16", "bf16": "BF16", "tf32": "TF32"}
# (type, k) -> (A registers, B registers) per lane
_MMA_REGS = {("f16", 8): (2, 1), ("f16", 16): (4, 2), ("bf16", 8): (2, 1), ("bf16", 16): (4, 2),
             ("tf32", 4): (2, 1), ("tf32", 8): (4, 2)}
EMU = "::harness_emu::"


@dataclass
class Operand:
    constraint: str  # letters only ("r", "f", "l", "n")
    expr: str
    output: bool
    read: bool  # an input, or a "+" output


def _find_closing_paren(code: str, start: int) -> int:
    depth = 0
    for i in range(start, len(code)):
        if code[i] in "([{":
            depth += 1
        elif code[i] in ")]}":
            if depth == 0:
                return i if code[i] == ")" else -1
            depth -= 1
    return -1


def _split_top(code: str, raw: str, sep: str) -> list[str]:
    """Pieces of `raw` between the `sep` characters that sit at nesting depth 0
    of `code` (`raw` with comments and literals blanked)."""
    out, depth, last = [], 0, 0
    for i, c in enumerate(code):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            out.append(raw[last:i])
            last = i + 1
    out.append(raw[last:])
    return out


_STRING = re.compile(r'\s*"((?:[^"\\\n]|\\.)*)"\s*')
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": "\r", "0": "\0"}


def _template_text(raw: str) -> str | None:
    """The concatenated string literals of an asm template, or None when it is
    anything else (a macro, a variable)."""
    parts, pos = [], 0
    while pos < len(raw):
        m = _STRING.match(raw, pos)
        if not m:
            return None if raw[pos:].strip() else "".join(parts)
        parts.append(re.sub(r"\\(.)", lambda e: _ESCAPES.get(e[1], e[1]), m[1]))
        pos = m.end()
    return "".join(parts) if parts else None


_OPERAND = re.compile(r'\s*"(?P<c>[^"]*)"\s*\((?P<e>.*)\)\s*', re.S)


def _operands(raw: str, code: str, output: bool) -> list[Operand] | None:
    if not raw.strip():
        return []
    ops = []
    for piece, blank in zip(_split_top(code, raw, ","), _split_top(code, code, ",")):
        m = _OPERAND.fullmatch(piece)
        if not m:
            return None  # named operands ([name] "r"(x)) and the like
        expr = blank[m.start("e"):m.end("e")] if ("//" in m["e"] or "/*" in m["e"]) else m["e"]
        ops.append(Operand("".join(ch for ch in m["c"] if ch.isalpha()), " ".join(expr.split()),
                           output, not output or "+" in m["c"]))
    return ops


def _split_args(text: str) -> list[str]:
    """An instruction's operands: the commas outside {vectors} and [addresses]."""
    pieces = [piece.strip() for piece in _split_top(text, text, ",")]
    return [] if pieces == [""] else pieces


class _Unsupported(Exception):
    """An instruction (named by the message) emu does not execute."""


class _Instruction:
    def __init__(self, text: str, operands: list[Operand], predicates: set[str] | None = None):
        self.text = text
        self.predicates = predicates if predicates is not None else set()
        self.opcode = text.split(" ", 1)[0]
        self.args = _split_args(text[len(self.opcode):].strip())
        self.operands = operands

    def fail(self) -> _Unsupported:
        return _Unsupported(self.opcode)

    def operand(self, ref: str, *, output: bool | None = None) -> Operand:
        m = re.fullmatch(r"%(\d+)", ref.strip())
        if not m or int(m[1]) >= len(self.operands):
            raise self.fail()
        op = self.operands[int(m[1])]
        if output is True and not op.output or output is False and not op.read:
            raise self.fail()
        return op

    def value(self, ref: str) -> str:
        """An integer operand: an immediate or a %N input."""
        ref = ref.strip()
        if re.fullmatch(r"-?(?:0[xX][0-9a-fA-F]+|\d+)[uU]?", ref):
            return ref
        return f"({self.operand(ref, output=False).expr})"

    def predicate(self, ref: str) -> str:
        """A predicate operand: a `.reg .pred` name of this asm, or an integer."""
        ref = ref.strip()
        if ref in self.predicates:
            return f"__emu_pred_{ref}"
        return f"({self.value(ref)} != 0)"

    def immediate(self, ref: str, allowed: tuple[int, ...]) -> str:
        """An integer immediate (a literal or an "n" operand) that must be one of `allowed`."""
        ref = ref.strip()
        if re.fullmatch(r"-?\d+", ref):
            if int(ref) not in allowed:
                raise self.fail()
            return ref
        op = self.operand(ref, output=False)
        if op.constraint != "n":
            raise self.fail()
        return f"({op.expr})"

    def vector(self, arg: str, size: int) -> list[str]:
        if not (arg.startswith("{") and arg.endswith("}")):
            raise self.fail()
        items = [s.strip() for s in arg[1:-1].split(",")]
        if len(items) != size:
            raise self.fail()
        return items

    def address(self, arg: str) -> str:
        m = re.fullmatch(r"\[\s*(%\d+)\s*(?:\+\s*(-?\d+|0[xX][0-9a-fA-F]+)\s*)?\]", arg)
        if not m:
            raise self.fail()
        base = f"{EMU}addr_operand({self.operand(m[1], output=False).expr})"
        return f"({base} + {m[2]})" if m[2] else base


def _mufu(ins: _Instruction, op: str) -> str:
    if op not in MUFU_PTX or len(ins.args) != 2:
        raise ins.fail()
    out, value = ins.operand(ins.args[0], output=True), ins.operand(ins.args[1], output=False)
    if out.constraint != "f" or value.constraint != "f":
        raise ins.fail()
    return f"({out.expr}) = {MUFU_PTX[op]}({value.expr});"


def _mma(ins: _Instruction, m: re.Match[str]) -> str:
    k, atype = int(m["k"]), m["a"]
    if m["b"] != atype or (atype, k) not in _MMA_REGS or len(ins.args) != 4:
        raise ins.fail()
    na, nb = _MMA_REGS[atype, k]
    d, a, b, c = (ins.vector(arg, n) for arg, n in zip(ins.args, (4, na, nb, 4)))
    bits = lambda ref: f"{EMU}reg_bits({ins.operand(ref, output=False).expr})"  # noqa: E731
    outs = [ins.operand(ref, output=True).expr for ref in d]
    return (f"{{ uint32_t __emu_a[4] = {{{', '.join(map(bits, a))}}}, __emu_b[2] = {{{', '.join(map(bits, b))}}}; "
            f"float __emu_c[4] = {{{', '.join(f'{EMU}from_bits<float>({bits(r)})' for r in c)}}}, __emu_d[4]; "
            f"{EMU}ptx_mma({EMU}MmaType::{_MMA_TYPES[atype]}, {k}, __emu_a, __emu_b, __emu_c, __emu_d, __FILE__, __LINE__); "
            + " ".join(f"{EMU}set_reg({o}, {EMU}reg_bits(__emu_d[{i}]));" for i, o in enumerate(outs)) + " }")


def _ldmatrix(ins: _Instruction, m: re.Match[str]) -> str:
    n = int(m["n"])
    if len(ins.args) != 2:
        raise ins.fail()
    outs = [ins.operand(ref, output=True).expr for ref in ins.vector(ins.args[0], n)]
    return (f"{{ uint32_t __emu_r[4]; {EMU}ptx_ldmatrix({n}, {'true' if m['trans'] else 'false'}, "
            f"{ins.address(ins.args[1])}, __emu_r, __FILE__, __LINE__); "
            + " ".join(f"{EMU}set_reg({o}, __emu_r[{i}]);" for i, o in enumerate(outs)) + " }")


def _cp_async(ins: _Instruction, m: re.Match[str]) -> str:
    if len(ins.args) not in (3, 4):
        raise ins.fail()
    dst, src, size = ins.address(ins.args[0]), ins.address(ins.args[1]), ins.value(ins.args[2])
    src_size = ins.value(ins.args[3]) if len(ins.args) == 4 else size
    return (f"{EMU}ptx_cp_async({'true' if m['level'] == 'cg' else 'false'}, {dst}, {src}, "
            f"(long long){size}, (long long){src_size}, __FILE__, __LINE__);")


def _global_access(ins: _Instruction, m: re.Match[str]) -> str:
    op, count, width = m["op"], int(m["vec"] or 1), int(m["type"][1:]) // 8
    if (m["order"] not in _ACCESS_ORDERS[op] or m["cache"] not in _ACCESS_CACHE[op]
            or (m["cache"] and m["sem"] not in (None, ".weak")) or count * width > 16 or len(ins.args) != 2):
        raise ins.fail()
    load = op == "ld"
    address = ins.address(ins.args[1] if load else ins.args[0])
    values = ins.args[0] if load else ins.args[1]
    refs = ins.vector(values, count) if count > 1 else [values]
    operands = [ins.operand(ref, output=load) for ref in refs]
    if any(o.constraint not in _WIDTH_CONSTRAINTS[width] for o in operands):
        raise ins.fail()
    what = f'"{ins.opcode} (inline PTX)"'
    if load:
        copies = " ".join(f"{EMU}set_operand<{width}>({o.expr}, __emu_m + {i * width});"
                          for i, o in enumerate(operands))
        return (f"{{ unsigned char __emu_m[16]; {EMU}ptx_global_access(false, {address}, __emu_m, {count * width}, "
                f"{what}, __FILE__, __LINE__); {copies} }}")
    copies = " ".join(f"{EMU}get_operand<{width}>({o.expr}, __emu_m + {i * width});" for i, o in enumerate(operands))
    return (f"{{ unsigned char __emu_m[16]; {copies} {EMU}ptx_global_access(true, {address}, __emu_m, "
            f"{count * width}, {what}, __FILE__, __LINE__); }}")


def _carry_arithmetic(ins: _Instruction, m: re.Match[str]) -> str:
    """add.cc / addc / sub.cc / subc on 32-bit registers as one 33-bit sum:
    a + b (+ CF), or a + ~b + 1 (subc: + CF); the carry is its bit 32."""
    if not (m["c"] or m["cc"]) or len(ins.args) != 3:
        raise ins.fail()  # a plain add or sub: not an extended-precision step
    out = ins.operand(ins.args[0], output=True)
    if out.constraint != "r":
        raise ins.fail()
    a, b = (f"(unsigned long long)(uint32_t){ins.value(ref)}" for ref in ins.args[1:])
    if m["op"] == "sub":
        b = f"(unsigned long long)(uint32_t)~(uint32_t){ins.value(ins.args[2])}"
    carry_in = CARRY_FLAG if m["c"] else ("1" if m["op"] == "sub" else "0")
    carry_out = f" {CARRY_FLAG} = (unsigned)(__emu_wide >> 32);" if m["cc"] else ""
    return (f"{{ unsigned long long __emu_wide = {a} + {b} + {carry_in}; "
            f"{EMU}set_reg({out.expr}, (uint32_t)__emu_wide);{carry_out} }}")


def _wgmma(ins: _Instruction, m: re.Match[str]) -> str:
    n = int(m["n"])
    tf32 = m["a"] == "tf32"
    if m["b"] != m["a"] or int(m["k"]) != (8 if tf32 else 16) or n % 8 or not 8 <= n <= 256:
        raise ins.fail()
    a_in_regs = ins.args[1:2] != [] and ins.args[1].startswith("{")
    # tf32 takes no transpose immediates (K-major operands only)
    if len(ins.args) != (6 if tf32 else 7 if a_in_regs else 8):
        raise ins.fail()
    d = [ins.operand(ref, output=True).expr for ref in ins.vector(ins.args[0], n // 2)]
    bits = lambda ref: f"{EMU}reg_bits({ins.operand(ref, output=False).expr})"  # noqa: E731
    a = [bits(r) for r in ins.vector(ins.args[1], 4)] if a_in_regs else ["0u"] * 4
    desc = lambda ref: f"{EMU}addr_operand({ins.operand(ref, output=False).expr})"  # noqa: E731
    desc_a = "0ull" if a_in_regs else desc(ins.args[1])
    rest = ins.args[3:]
    scale_d = ins.predicate(rest[0])
    scale_a, scale_b = (ins.immediate(r, (1, -1)) for r in rest[1:3])
    trans_a = "0" if a_in_regs or tf32 else ins.immediate(rest[3], (0, 1))
    trans_b = "0" if tf32 else ins.immediate(rest[-1], (0, 1))
    ty = _MMA_TYPES[m["a"]]
    return (f"{{ uint32_t __emu_a[4] = {{{', '.join(a)}}}; "
            f"float __emu_d[{n // 2}] = {{{', '.join(f'{EMU}from_bits<float>({EMU}reg_bits({x}))' for x in d)}}}; "
            f"{EMU}ptx_wgmma({EMU}WgmmaType::{ty}, {n}, {'true' if a_in_regs else 'false'}, __emu_a, {desc_a}, "
            f"{desc(ins.args[2])}, {scale_d}, (int){scale_a}, (int){scale_b}, (int){trans_a}, (int){trans_b}, "
            f"__emu_d, __FILE__, __LINE__); "
            + " ".join(f"{EMU}set_reg({o}, {EMU}reg_bits(__emu_d[{i}]));" for i, o in enumerate(d)) + " }")


_WGMMA_SYNC = {"wgmma.fence.sync.aligned": 0, "wgmma.commit_group.sync.aligned": 0, "wgmma.wait_group.sync.aligned": 1}


def _instruction(text: str, operands: list[Operand], predicates: set[str] | None = None) -> str:
    predicates = predicates if predicates is not None else set()
    if m := _PRED_DECL.fullmatch(text):
        names = [name.strip() for name in m["names"].split(",")]
        predicates.update(names)
        return " ".join(f"bool __emu_pred_{name} = false;" for name in names)
    ins = _Instruction(text, operands, predicates)
    op = ins.opcode
    if m := _WGMMA.fullmatch(op):
        return _wgmma(ins, m)
    if op in _WGMMA_SYNC and len(ins.args) == _WGMMA_SYNC[op]:
        if ins.args:
            ins.value(ins.args[0])  # wait_group's N: an integer
        return f'{EMU}wgmma_sync_op("{op}");'
    if op in ("fence.proxy.async", "fence.proxy.async.shared::cta") and not ins.args:
        return f'{EMU}wgmma_sync_op("{op}");'  # one proxy on emu: nothing to order
    if (m := _SETP.fullmatch(op)) and len(ins.args) == 3 and ins.args[0] in predicates:
        cmp = "==" if m["cmp"] == "eq" else "!="
        return f"__emu_pred_{ins.args[0]} = ({ins.value(ins.args[1])} {cmp} {ins.value(ins.args[2])});"
    if (m := _BARRIER.fullmatch(op)) and len(ins.args) in ((1, 2) if m["op"] == "sync" else (2,)):
        count = f"(int){ins.value(ins.args[1])}" if len(ins.args) == 2 else "-1"
        return (f'{EMU}named_barrier({"true" if m["op"] == "sync" else "false"}, (int){ins.value(ins.args[0])}, '
                f'{count}, "{op}", __FILE__, __LINE__);')
    if m := _CARRY.fullmatch(op):
        return _carry_arithmetic(ins, m)
    if m := _MUFU.fullmatch(op):
        return _mufu(ins, m["op"])
    if m := _MMA.fullmatch(op):
        return _mma(ins, m)
    if m := _LDMATRIX.fullmatch(op):
        return _ldmatrix(ins, m)
    if m := _CP_ASYNC.fullmatch(op):
        return _cp_async(ins, m)
    if m := _GLOBAL_ACCESS.fullmatch(op):
        return _global_access(ins, m)
    if _PREFETCH.fullmatch(op) and len(ins.args) == 1:
        return f"(void){ins.address(ins.args[0])};"
    if (m := _BULK_PREFETCH.fullmatch(op)) and len(ins.args) == (3 if m["hint"] else 2):
        if m["hint"]:
            ins.operand(ins.args[2], output=False)  # the cache policy: a hint
        return f"{EMU}ptx_bulk_prefetch({ins.address(ins.args[0])}, (long long){ins.value(ins.args[1])}, __FILE__, __LINE__);"
    if op == "cvt.rna.tf32.f32" and len(ins.args) == 2:
        out, value = ins.operand(ins.args[0], output=True), ins.operand(ins.args[1], output=False)
        return (f"{EMU}set_reg({out.expr}, {EMU}reg_bits({EMU}round_to_tf32("
                f"{EMU}from_bits<float>({EMU}reg_bits({value.expr})))));")
    if op in ("griddepcontrol.wait", "griddepcontrol.launch_dependents") and not ins.args:
        return "(void)0;"  # launches run in turn on emu: the one before has finished
    if op == "cp.async.commit_group" and not ins.args:
        return f"{EMU}async_commit();"
    if op == "cp.async.wait_group" and len(ins.args) == 1:
        return f'{EMU}async_wait((long long){ins.value(ins.args[0])}, "cp.async.wait_group");'
    if op == "cp.async.wait_all" and not ins.args:
        return f"{EMU}async_wait_all();"
    raise ins.fail()


@dataclass
class Rewrite:
    start: int
    end: int
    text: str


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def asm_rewrites(source: str, code: str, filename: str) -> list[Rewrite]:
    """Rewrites of the asm statements of `source` (`code`: the same text with
    comments and literals blanked). Raises UnsupportedFeature for a parsed
    statement with an instruction emu does not execute."""
    rewrites = []
    for m in ASM_START.finditer(code):
        open_paren = m.end() - 1
        close = _find_closing_paren(code, open_paren + 1)
        if close < 0:
            continue
        # a #define's line continuations read as blanks (same length: offsets agree)
        raw = source[open_paren + 1:close].replace("\\\n", "  ")
        blank = code[open_paren + 1:close].replace("\\\n", "  ")
        sections = _split_top(blank, raw, ":")
        blanks = _split_top(blank, blank, ":")
        template = _template_text(sections[0])
        if template is None or len(sections) > 4:
            continue  # not parsed: check_supported refuses it
        outputs = _operands(sections[1], blanks[1], True) if len(sections) > 1 else []
        inputs = _operands(sections[2], blanks[2], False) if len(sections) > 2 else []
        if outputs is None or inputs is None:
            continue
        operands = outputs + inputs
        statements: list[str] = []
        predicates: set[str] = set()
        try:
            for text in template.split(";"):
                text = " ".join(text.split())
                while text.startswith("{"):  # a scope (an instruction never starts with a vector)
                    statements.append("{")
                    text = text[1:].strip()
                closes = 0
                while text.endswith("}") and text.count("}") > text.count("{"):
                    closes += 1
                    text = text[:-1].strip()
                if text:
                    statements.append(_instruction(text, operands, predicates))
                statements.extend("}" * closes)
        except _Unsupported as e:
            raise UnsupportedFeature(
                f"not supported on emu: inline PTX assembly (asm): {e} at {filename}:{_line_of(source, m.start())}"
            ) from None
        if not statements:
            continue
        spanned = source[m.start():close + 1]
        newline = "\\\n" if "\\\n" in spanned else "\n"  # inside a #define, lines continue
        if any(CARRY_FLAG in statement for statement in statements):
            statements.insert(0, f"unsigned {CARRY_FLAG} = 0;")
        text = f"[&]() {{ {' '.join(statements)} }}()" + newline * spanned.count("\n")
        rewrites.append(Rewrite(m.start(), close + 1, text))
    return rewrites
