"""CUDA C source -> C++ for the emu runtime header.

The rewrite keeps every line where it was (a `#line 1` directive on top maps
the output back to the .cu file), so compiler errors, __LINE__ in barrier
diagnostics and ASan reports all point at the original source. Only a few
constructs need rewriting; everything else is handled by the force-included
runtime header:

* `kernel<<<grid, block, smem, stream>>>(args)` -> a `harness_emu::Launcher`
  call; arguments are evaluated once, each CUDA thread gets copies.
* `extern __shared__ T name[];` -> a pointer into the per-launch dynamic
  shared memory buffer.
* `static __shared__` -> `__shared__` (which the header turns into `static`).
* inline PTX: special-function instructions, mma.sync, ldmatrix and cp.async
  become calls into the runtime (ptx.py); any other asm is refused.
* the `__noinline__` qualifier -> `__attribute__((noinline))`: a keyword here,
  as in nvcc, not a macro in the header (see NOINLINE).

Features emu cannot execute raise UnsupportedFeature with file:line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import UnsupportedFeature
from .ptx import asm_rewrites


@dataclass(frozen=True)
class Unsupported:
    pattern: re.Pattern[str]
    feature: str


# Matched against the source with comments and string literals blanked.
UNSUPPORTED = [
    Unsupported(re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile\b|__volatile__\b)?\s*(?:goto\s*)?\("),
                "inline PTX assembly (asm)"),
    Unsupported(re.compile(r"\b__hmma\w*|\b__imma\w*|\bbmma_sync\b|\bwmma\s*::\s*experimental\b|\bprecision\s*::\s*(?:u4|s4|b1)\b"),
                "tensor-core intrinsics beyond wmma half/bf16/tf32/double (__hmma, sub-byte or 1-bit wmma)"),
    Unsupported(re.compile(r"\bfragment\s*<\s*(?:\w+\s*::\s*)*(?:matrix_a|matrix_b|accumulator)\s*,[^;{}()]*?"
                           r"\b(?:signed\s+char|unsigned\s+char|u?int8_t|int|int32_t)\s*[,>]"),
                "wmma integer (int8/int32) fragments"),
    Unsupported(re.compile(r"\bthis_grid\s*\(|\bgrid_group\b|\bthis_multi_grid\s*\("),
                "cooperative-groups grid synchronization (this_grid/grid.sync)"),
    Unsupported(re.compile(r"\bcudaLaunchCooperativeKernel\w*\b"), "cooperative kernel launch"),
    Unsupported(re.compile(r"\b(?:texture|surface)\s*<|\bcuda(?:Texture|Surface)Object_t\b|\btex(?:1D|2D|3D|Cubemap)\w*\s*[<(]"
                           r"|\bsurf(?:1D|2D|3D)\w*\s*[<(]|\bcuda(?:Create|Destroy)(?:Texture|Surface)Object\b|\bcudaBindTexture\w*\b"),
                "textures/surfaces"),
    Unsupported(re.compile(r"\bcuda::memcpy_async\b|\bexperimental\s*::\s*pipeline\b"),
                "asynchronous copies through libcu++ (cuda::memcpy_async, cuda::pipeline)"),
]
UNSUPPORTED_INCLUDES = [
    (re.compile(r"^\s*#\s*include\s*[<\"](?:cub|thrust|cuda/|cutlass|cute)[^>\"]*[>\"]", re.M), "CUB/Thrust/libcu++/CUTLASS headers"),
    (re.compile(r"^\s*#\s*include\s*[<\"](?:cublas|cudnn|cufft|curand|cusparse|cusolver|nccl)\w*\.h[>\"]", re.M),
     "CUDA libraries (cuBLAS, cuDNN, cuFFT, cuRAND...)"),
]

# `__noinline__` is the one CUDA qualifier that is also a reserved GNU spelling:
# libstdc++ writes `__attribute__((__noinline__))` (<memory>, <future>, <regex>...),
# so a macro for it in the runtime header rewrites the standard library into
# `__attribute__((__attribute__((noinline))))`. nvcc treats it as a keyword and
# defines no macro; emu rewrites only the solution's own uses, and leaves the
# GNU spelling inside `__attribute__((...))` and `[[...]]` to g++.
NOINLINE = re.compile(r"\b__noinline__\b")
ATTRIBUTE_OPEN = re.compile(r"\b__attribute__\s*\(\(|\[\[")

_DECL_PART = r"(?:[\w:<>,\s*]|__align__\s*\(\s*\w+\s*\)|alignas\s*\(\s*\w+\s*\)|__attribute__\s*\(\([^;{}]*?\)\))"
EXTERN_SHARED = re.compile(rf"\bextern\s+({_DECL_PART}*?)\b__shared__\b({_DECL_PART}*?)\[\s*\]\s*;")
STATIC_SHARED = re.compile(r"\bstatic\s+__shared__\b|\b__shared__\s+static\b")
ALIGN_SPEC = re.compile(r"__align__\s*\(\s*\w+\s*\)|alignas\s*\(\s*\w+\s*\)|__attribute__\s*\(\([^;{}]*?\)\)")


def blank_comments_and_strings(text: str) -> str:
    """Same length as `text`, with comments and string/char literals replaced by
    spaces (newlines kept) so that searches only see code."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_") and text[i - 1] not in "uUL8":
                i += 1  # digit separator (1'000'000)
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _raise_unsupported(feature: str, filename: str, text: str, pos: int) -> None:
    raise UnsupportedFeature(f"not supported on emu: {feature} at {filename}:{line_of(text, pos)}")


def check_supported(code: str, raw: str, filename: str) -> None:
    for rx, feature in UNSUPPORTED_INCLUDES:
        m = rx.search(raw)
        if m:
            _raise_unsupported(feature, filename, raw, m.start())
    hits = [(m.start(), u.feature) for u in UNSUPPORTED for m in [u.pattern.search(code)] if m]
    if hits:
        pos, feature = min(hits)
        _raise_unsupported(feature, filename, code, pos)


def device_body_spans(code: str) -> list[tuple[int, int]]:
    """Spans of the bodies of __global__ and __device__ (not __host__) functions."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[int, bool]] = []  # (open position, is device code)
    header_start = 0
    for i, c in enumerate(code):
        if c == "{":
            header = code[header_start:i]
            inside = bool(stack) and stack[-1][1]
            is_fn = re.search(r"\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[\w:<>,\s*&]+)?$", header) is not None
            device = re.search(r"\b(?:__global__|__device__)\b", header) is not None and "__host__" not in header
            stack.append((i, inside or (device and is_fn)))
            header_start = i + 1
        elif c == "}":
            if stack:
                start, device = stack.pop()
                if device and not (stack and stack[-1][1]):
                    spans.append((start, i))
            header_start = i + 1
        elif c == ";":
            header_start = i + 1
    return spans


def _match_backward_angle(code: str, end: int) -> int:
    """Index of the '<' matching the '>' at code[end], scanning backwards."""
    depth = 0
    for i in range(end, -1, -1):
        if code[i] == ">":
            depth += 1
        elif code[i] == "<":
            depth -= 1
            if depth == 0:
                return i
        elif code[i] in ";{}":
            break
    return -1


def _kernel_expr_start(code: str, pos: int) -> int:
    """Start of the kernel expression (`ns::kern<T, 4>`) that ends before `pos`."""
    i = pos - 1
    while i >= 0 and code[i].isspace():
        i -= 1
    while True:
        if i >= 0 and code[i] == ">":
            j = _match_backward_angle(code, i)
            if j < 0:
                return -1
            i = j - 1
            while i >= 0 and code[i].isspace():
                i -= 1
        end = i
        while i >= 0 and (code[i].isalnum() or code[i] == "_"):
            i -= 1
        if i == end:
            return -1
        k = i
        while k >= 0 and code[k].isspace():
            k -= 1
        if k >= 1 and code[k - 1 : k + 1] == "::":
            i = k - 2
            while i >= 0 and code[i].isspace():
                i -= 1
            continue
        return i + 1


def _find_closing(code: str, start: int, closer: str) -> int:
    """Position of `closer` at nesting depth 0 from `start` (parens/brackets/braces)."""
    depth = 0
    i = start
    while i < len(code):
        c = code[i]
        if depth == 0 and code.startswith(closer, i):
            return i
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return -1
        i += 1
    return -1


@dataclass
class Edit:
    start: int
    end: int
    text: str


def _launch_edits(code: str, raw: str, filename: str) -> list[Edit]:
    edits: list[Edit] = []
    device_spans = device_body_spans(code)
    for m in re.finditer(r"<<<", code):
        pos = m.start()
        if any(a < pos < b for a, b in device_spans):
            _raise_unsupported("dynamic parallelism (kernel launch in device code)", filename, code, pos)
        kstart = _kernel_expr_start(code, pos)
        cfg_end = _find_closing(code, pos + 3, ">>>")
        if kstart < 0 or cfg_end < 0:
            continue  # not a launch we understand; g++ will report it
        j = cfg_end + 3
        while j < len(code) and code[j].isspace():
            j += 1
        if j >= len(code) or code[j] != "(":
            continue
        args_end = _find_closing(code, j + 1, ")")
        if args_end < 0:
            continue
        kernel = raw[kstart:pos].strip()
        name = " ".join(kernel.split())
        config = raw[pos + 3 : cfg_end]
        args = raw[j + 1 : args_end]
        call = f"[&](auto&&... __emu_a) {{ {kernel}(__emu_a...); }}"
        rest = f"{call}, {args}" if args.strip() else call
        new = f'::harness_emu::Launcher(__FILE__, __LINE__, "{name}", {config})({rest})'
        missing = raw[kstart : args_end + 1].count("\n") - new.count("\n")
        edits.append(Edit(kstart, args_end + 1, new + "\n" * max(missing, 0)))
    return edits


def _shared_edits(code: str, raw: str) -> list[Edit]:
    edits: list[Edit] = []
    for m in EXTERN_SHARED.finditer(code):
        decl = ALIGN_SPEC.sub(" ", m.group(1) + " " + m.group(2))
        words = decl.split()
        if len(words) < 2:
            continue
        name, ctype = words[-1], " ".join(words[:-1])
        text = f"{ctype}* const {name} = reinterpret_cast<{ctype}*>(::harness_emu::dyn_smem);"
        edits.append(Edit(m.start(), m.end(), text + "\n" * raw[m.start() : m.end()].count("\n")))
    for m in STATIC_SHARED.finditer(code):
        edits.append(Edit(m.start(), m.end(), "__shared__"))
    return edits


def _noinline_edits(code: str) -> list[Edit]:
    attributes: list[tuple[int, int]] = []  # spans of __attribute__((...)) and [[...]]
    for m in ATTRIBUTE_OPEN.finditer(code):
        end = _find_closing(code, m.end(), "))" if m.group().startswith("__attribute__") else "]]")
        attributes.append((m.start(), end if end >= 0 else len(code)))
    return [
        Edit(m.start(), m.end(), "__attribute__((noinline))")
        for m in NOINLINE.finditer(code)
        if not any(start < m.start() < end for start, end in attributes)
    ]


def _apply(source: str, edits: list[Edit]) -> str:
    out: list[str] = []
    last = 0
    for e in sorted(edits, key=lambda e: e.start):
        if e.start < last:
            continue  # overlapping (cannot happen for well-formed code)
        out.append(source[last : e.start])
        out.append(e.text)
        last = e.end
    out.append(source[last:])
    return "".join(out)


def translate(source: str, filename: str) -> str:
    """The C++ text to compile with the runtime header force-included.
    `filename` is what diagnostics call the file (used in #line)."""
    asm = asm_rewrites(source, blank_comments_and_strings(source), filename)
    source = _apply(source, [Edit(r.start, r.end, r.text) for r in asm])
    code = blank_comments_and_strings(source)
    check_supported(code, source, filename)
    edits = _launch_edits(code, source, filename) + _shared_edits(code, source) + _noinline_edits(code)
    escaped = filename.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{escaped}"\n' + _apply(source, edits)
