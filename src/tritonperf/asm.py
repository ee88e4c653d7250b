"""The compiled code of a Triton kernel, for a Hopper GPU, on any machine.

Triton compiles a ``@triton.jit`` function in stages: Triton IR (TTIR), Triton GPU IR (TTGIR,
where every tensor has a layout over threads and warps), LLVM IR, PTX, and a cubin that
``ptxas`` assembles and whose machine code (SASS) a disassembler prints. Compiling needs no
GPU, only a target: :func:`compile_for_hopper` compiles one kernel for ``sm_90`` without
launching it and returns every stage as text, plus what the cubin asks of the hardware
(registers, local memory) when the installed Triton carries NVIDIA's ``cuobjdump``.

Kernels are compiled for the arguments a launch would have, given as a signature (Triton's
type strings, ``"*fp32"``, ``"i32"``, ...), the values of the ``tl.constexpr`` parameters, and
the arguments known to be multiples of 16 (pointers: 16-byte aligned addresses). A real
launch finds those facts out from the arguments and compiles one variant per combination;
here they are stated, so any variant can be looked at.

Interpreter mode (``TRITON_INTERPRET=1``, set by :mod:`tritonperf` on a machine without a GPU)
makes ``@triton.jit`` return interpreted functions, Triton's own library functions
(``tl.cdiv``, ``tl.max``, ...) included. This module rebuilds compilable functions from their
Python source, and puts compilable versions of the library functions in place of the
interpreted ones for the duration of a compilation, so the same call works in both modes.
Running kernels through the interpreter leaves parts of ``triton.language`` replaced; after
that, compilations run in a fresh Python process instead.

:func:`write_excerpts` writes the excerpts that the chapter "Reading compiled code" shows.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import types
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import triton

STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
HOPPER = ("cuda", 90, 32)  # backend, compute capability, threads per warp: triton's GPUTarget fields


# -- what a compilation returns --------------------------------------------------------------------
@dataclass(frozen=True)
class Resources:
    """What the cubin asks of an SM per thread, as ``cuobjdump -res-usage`` reports it.

    Attributes:
        registers: 32-bit registers per thread.
        local_bytes: local memory the kernel itself declares per thread.
        stack_bytes: stack frame per thread, also in local memory. Registers that ``ptxas``
            spills go to the stack frame (``ptxas -v`` reports them as part of it), so this is
            the field that shows spills.
    """

    registers: int
    local_bytes: int
    stack_bytes: int

    @property
    def local_memory_bytes(self) -> int:
        """All local memory per thread, stack frame included. In a Triton kernel, above 0 almost always means spills."""
        return self.local_bytes + self.stack_bytes


@dataclass(frozen=True)
class CompiledText:
    """Every stage of one compilation, as text.

    Attributes:
        name: the kernel's name.
        target: ``"cuda:90"``.
        triton_version: the Triton that compiled it.
        num_warps: warps per program.
        num_stages: the software-pipelining depth it was compiled with.
        shared_bytes: shared memory per program, reserved by the compiler (dynamic shared memory).
        divisible_by_16: the arguments it was told are multiples of 16.
        constexprs: the compile-time constants it was compiled with.
        stages: ``"ttir"``, ``"ttgir"``, ``"llir"``, ``"ptx"`` and, when a disassembler was found,
            ``"sass"``.
        resources: registers and local memory per thread, or None without ``cuobjdump``.
    """

    name: str
    target: str
    triton_version: str
    num_warps: int
    num_stages: int
    shared_bytes: int
    divisible_by_16: tuple[str, ...]
    constexprs: dict[str, object]
    stages: dict[str, str] = field(repr=False)
    resources: Resources | None = None

    def __getitem__(self, stage: str) -> str:
        if stage not in self.stages:
            have = ", ".join(self.stages)
            raise KeyError(f"no stage {stage!r} in this compilation (it has {have})")
        return self.stages[stage]

    @property
    def ttir(self) -> str:
        """The kernel as operations on whole tensors, before any layout is chosen (Triton IR)."""
        return self.stages["ttir"]

    @property
    def ttgir(self) -> str:
        """The same operations, each tensor with a layout over threads and warps (Triton GPU IR)."""
        return self.stages["ttgir"]

    @property
    def llir(self) -> str:
        """The program of one thread, in LLVM IR."""
        return self.stages["llir"]

    @property
    def ptx(self) -> str:
        """PTX, NVIDIA's virtual instruction set, as handed to ``ptxas``."""
        return self.stages["ptx"]

    @property
    def sass(self) -> str | None:
        """The machine code of the cubin, or None when no disassembler was found."""
        return self.stages.get("sass")


# -- the tools that come with triton --------------------------------------------------------------
def find_tool(name: str) -> str | None:
    """Path of one of NVIDIA's tools (``ptxas``, ``cuobjdump``, ``nvdisasm``), or None.

    Looks where Triton looks (its ``TRITON_<NAME>_PATH`` variable, then the copy that Triton's
    wheels ship in ``triton/backends/nvidia/bin``), then on ``PATH``.
    """
    with contextlib.suppress(Exception):  # triton.knobs exists from 3.4 on; it raises when the tool is missing
        from triton import knobs

        return getattr(knobs.nvidia, name.replace("-", "_")).path
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    if bundled.is_file():
        return str(bundled)
    return shutil.which(name)


def ptxas_for(arch: int) -> tuple[str, str] | None:
    """Path and CUDA release of the ``ptxas`` Triton runs now for compute capability ``arch``
    (``90`` for sm_90), or None when it has none.

    Triton's wheels carry more than one ``ptxas``; each Triton version picks its own for a target,
    unless ``TRITON_PTXAS_PATH`` names another (see :func:`tritonperf.runtime.use_torch_ptxas`).
    """
    with contextlib.suppress(Exception):
        from triton.backends.nvidia.compiler import get_ptxas

        tool = get_ptxas(arch)
        return tool.path, tool.version
    path = find_tool("ptxas")
    if path is None:
        return None
    try:
        listing = _run_tool(path, "--version")
    except (subprocess.CalledProcessError, OSError):
        return None
    found = re.search(r"release (\d+\.\d+)", listing)
    return path, found.group(1) if found else "unknown"


def ptxas_for_hopper() -> tuple[str, str] | None:
    """:func:`ptxas_for` sm_90."""
    return ptxas_for(HOPPER[1])


def cuda_compiler_missing() -> str | None:
    """Why the installed Triton cannot compile for CUDA, or None when it can."""
    try:
        from triton.backends import backends
    except ImportError as err:
        return f"triton {triton.__version__} has no compiler backends ({err})"
    if "nvidia" not in backends:
        return f"triton {triton.__version__} was installed without its NVIDIA backend"
    if ptxas_for_hopper() is None:
        return (f"ptxas was not found: triton {triton.__version__} looks for it in TRITON_PTXAS_PATH and "
                "triton/backends/nvidia/bin, and it is not on PATH either")
    return None


def _run_tool(tool: str, *args: str) -> str:
    return subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout


def _disassemble(cubin: bytes) -> tuple[str | None, Resources | None]:
    """SASS of a cubin and its resource usage, each None when the tool for it is missing."""
    nvdisasm, cuobjdump = find_tool("nvdisasm"), find_tool("cuobjdump")
    if nvdisasm is None and cuobjdump is None:
        return None, None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        sass = resources = None
        with contextlib.suppress(subprocess.CalledProcessError, OSError):
            if nvdisasm:
                sass = _sass_lines(_run_tool(nvdisasm, "-c", str(path)))
            else:
                sass = _sass_lines(_run_tool(cuobjdump, "-sass", str(path)))
        if cuobjdump:
            with contextlib.suppress(subprocess.CalledProcessError, OSError):
                resources = _parse_resources(_run_tool(cuobjdump, "-res-usage", str(path)))
    return sass, resources


_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;?\s*(/\*.*\*/)?\s*$")
_SASS_LABEL = re.compile(r"^\s*(\.L_\w+):")


def _sass_lines(listing: str) -> str:
    """One instruction per line (``/*0040*/ IMAD ...``) and branch labels, from either tool's listing."""
    out = []
    for line in listing.splitlines():
        if label := _SASS_LABEL.match(line):
            out.append(f"{label.group(1)}:")
        elif (m := _SASS_INSTRUCTION.match(line)) and m.group(1):
            address = line.split("*/", 1)[0].strip() + "*/"
            out.append(f"    {address} {m.group(1).rstrip(' ;')} ;")
    return "\n".join(out) + "\n"


def _parse_resources(listing: str) -> Resources | None:
    fields = dict(re.findall(r"\b(REG|STACK|LOCAL):(\d+)", listing))
    if "REG" not in fields:
        return None
    return Resources(int(fields["REG"]), int(fields.get("LOCAL", 0)), int(fields.get("STACK", 0)))


# -- from an interpreted kernel to a compilable one ------------------------------------------------
_lock = threading.RLock()
_converted: dict[object, object] = {}  # Python function -> JITFunction made from it
_scopes: dict[int, tuple[dict, dict]] = {}  # id of a module's globals -> (those globals, the copy compiled code sees)


def _is_interpreted(obj: object) -> bool:
    return type(obj).__name__ == "InterpretedFunction" and inspect.isfunction(getattr(obj, "fn", None))


def _jit_options(interpreted: object) -> dict:
    """The options given to ``@triton.jit`` (noinline, do_not_specialize, ...) that JITFunction accepts."""
    from triton.runtime.jit import JITFunction

    accepted = inspect.signature(JITFunction.__init__).parameters
    given = getattr(interpreted, "kwargs", None) or {}
    return {k: v for k, v in given.items() if k in accepted and k != "fn"}


def _is_gluon_calling_interpreted(obj: object) -> bool:
    """A ``@gluon.jit`` function whose module holds interpreted ``@triton.jit`` helpers it may call."""
    return type(obj).__name__ == "GluonJITFunction" and any(_is_interpreted(v) for v in obj.fn.__globals__.values())


def _compilable_value(value: object) -> object:
    if _is_interpreted(value):
        return _as_jit(value.fn, _jit_options(value))
    if _is_gluon_calling_interpreted(value):
        return _as_jit(value.fn, {"noinline": value.noinline}, type(value))
    return value


def _as_jit(fn: types.FunctionType, options: dict | None = None, cls: type | None = None):
    """A JITFunction (or ``cls``, a subclass) made from the Python function ``fn``, whose interpreted
    callees are made compilable too."""
    from triton.runtime.jit import JITFunction

    if fn in _converted:
        return _converted[fn]
    # Keeping a reference to the globals keeps their id from being reused by another dict.
    scope = _scopes[id(fn.__globals__)][1] if id(fn.__globals__) in _scopes else None
    fresh = scope is None
    if fresh:
        scope = dict(fn.__globals__)
        _scopes[id(fn.__globals__)] = (fn.__globals__, scope)
    closure = fn.__closure__
    if closure is not None:
        closure = tuple(types.CellType(_compilable_value(cell.cell_contents)) for cell in closure)
    clone = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, closure)
    clone.__module__, clone.__qualname__, clone.__doc__ = fn.__module__, fn.__qualname__, fn.__doc__
    clone.__kwdefaults__, clone.__annotations__ = fn.__kwdefaults__, fn.__annotations__
    _converted[fn] = jit = (cls or JITFunction)(clone, **(options or {}))
    if fresh:  # the helpers a kernel calls by name live in the same globals: convert them all, once
        for name, value in list(scope.items()):
            if _is_interpreted(value) or _is_gluon_calling_interpreted(value):
                scope[name] = _compilable_value(value)
    return jit


def jit_function(kernel: object):
    """The compilable ``JITFunction`` behind ``kernel``.

    ``kernel`` may be a ``JITFunction`` (returned as is), an interpreted function (interpreter
    mode), a plain Python function, or an autotuner or heuristics wrapper around any of these.
    """
    from triton.runtime.jit import JITFunction

    obj = kernel
    for _ in range(8):  # autotune(heuristics(jit(fn))) at most nests a few levels deep
        if _is_gluon_calling_interpreted(obj):  # in interpreter mode: its @triton.jit helpers are interpreted
            with _lock:
                return _compilable_value(obj)
        if isinstance(obj, JITFunction):
            return obj
        if _is_interpreted(obj):
            with _lock:
                return _as_jit(obj.fn, _jit_options(obj))
        if inspect.isfunction(obj):
            with _lock:
                return _as_jit(obj)
        if not hasattr(obj, "fn"):
            break
        obj = obj.fn
    raise TypeError(f"expected a @triton.jit function, got {type(kernel).__name__}")


@contextlib.contextmanager
def _compilable_language() -> Iterator[None]:
    """While compiling in interpreter mode: compilable ``triton.language`` functions instead of interpreted ones."""
    import triton.language as tl

    swapped: list[tuple[object, str, object]] = []
    with _lock:
        try:
            for module in [m for name, m in list(sys.modules.items()) if name.startswith("triton.language") and m]:
                for name, value in list(vars(module).items()):
                    if _is_interpreted(value):
                        swapped.append((module, name, value))
                        setattr(module, name, _compilable_value(value))
            for name, value in list(vars(tl.core.tensor).items()):  # x.sum(), x.max(): wrappers around library functions
                target = next((c.cell_contents for c in (getattr(value, "__closure__", None) or ())
                               if _is_interpreted(c.cell_contents)), None)
                if target is not None:
                    swapped.append((tl.core.tensor, name, value))
                    setattr(tl.core.tensor, name, _compilable_value(target))
            yield
        finally:
            for owner, name, value in reversed(swapped):
                setattr(owner, name, value)


# -- compiling ----------------------------------------------------------------------------------------
def _ast_source(fn, signature: dict[str, str], constexprs: dict[str, object], divisible: Iterable[str]):
    from triton.compiler import ASTSource

    params = inspect.signature(ASTSource.__init__).parameters
    if "constexprs" not in params or "attrs" not in params:
        raise RuntimeError(
            f"triton {triton.__version__}: ASTSource{tuple(params)[1:]} is not the interface this module knows "
            "(signature and constexprs by parameter name, attrs by argument index, as in triton 3.6 to 3.9)"
        )
    names = list(fn.arg_names)
    attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in divisible}
    if type(fn).__name__ == "GluonJITFunction":  # a @gluon.jit kernel: its source starts at TTGIR
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(fn, signature, constexprs, attrs)
    return ASTSource(fn, signature, constexprs, attrs)


def _full_signature(fn, signature: dict[str, str], constexprs: dict[str, object]) -> dict[str, str]:
    names = list(fn.arg_names)
    unknown = sorted(set(signature) - set(names)) + sorted(set(constexprs) - set(names))
    if unknown:
        raise ValueError(f"{fn.__name__} has no parameter(s) {', '.join(unknown)}; its parameters: {', '.join(names)}")
    full = {}
    for name in names:
        if name in constexprs:
            full[name] = "constexpr"
        elif name in signature:
            full[name] = signature[name]
        else:
            raise ValueError(f"{fn.__name__}: give a type for {name!r} in the signature (e.g. '*fp32', 'i32') "
                             "or a value in constexprs")
    return full


def compile_for_hopper(
    kernel: object,
    signature: dict[str, str],
    constexprs: dict[str, object] | None = None,
    *,
    num_warps: int = 4,
    num_stages: int = 3,
    divisible_by_16: Iterable[str] | None = None,
) -> CompiledText:
    """Compile ``kernel`` for an NVIDIA Hopper GPU (``sm_90``) without launching it.

    Works with or without a GPU, in GPU mode and in interpreter mode. Once the interpreter has
    run a kernel in this process it leaves parts of ``triton.language`` replaced by its own
    versions; the compilation then runs in a fresh Python process, which needs ``kernel`` to be
    importable (defined at the top level of a module other than ``__main__``). A kernel that
    does not compile for these arguments raises Triton's own ``CompilationError``.

    Args:
        kernel: a ``@triton.jit`` function (or an interpreted one, or an autotuner around one),
            or a ``@gluon.jit`` one (whose compilation has no ``ttir`` stage).
        signature: Triton's type of every runtime argument, by parameter name: ``"*fp32"``,
            ``"*fp16"``, ``"*i32"`` for pointers, ``"i32"``, ``"i64"``, ``"fp32"`` for scalars
            (a tensor descriptor's is ``"tensordesc<...>"``, as ``triton.runtime.jit.mangle_type`` gives it).
        constexprs: the value of every ``tl.constexpr`` parameter without a default, by name
            (others take their defaults, as in a launch). A launch also turns
            an integer argument equal to 1 into a constant; pass it here to get that variant.
        num_warps: warps per program.
        num_stages: software-pipelining depth (Triton's default for CUDA is 3).
        divisible_by_16: arguments that are multiples of 16: pointers 16-byte aligned, integers
            divisible by 16, as a launch would detect. Default: every pointer and nothing else.

    Returns:
        The text of every stage, the shared memory reserved and, when ``cuobjdump`` is found,
        registers and local memory per thread.

    Raises:
        RuntimeError: this Triton cannot compile for CUDA, or a compilation in a fresh process
            failed or was impossible (the message says why).
        ValueError: a parameter without a type or value, or a name the kernel does not have.
    """
    if reason := cuda_compiler_missing():
        raise RuntimeError(f"cannot compile for sm_90: {reason}")
    fn = jit_function(kernel)
    constexprs = dict(constexprs or {})
    for name, param in inspect.signature(fn.fn).parameters.items():  # what a launch leaves out: the defaults
        if name not in constexprs and name not in signature and param.default is not inspect.Parameter.empty:
            constexprs[name] = param.default
    full = _full_signature(fn, signature, constexprs)
    if divisible_by_16 is None:
        divisible = [name for name, kind in full.items() if kind.startswith("*")]
    else:
        divisible = list(divisible_by_16)
        unknown = [name for name in divisible if full.get(name, "constexpr") == "constexpr"]
        if unknown:
            raise ValueError(f"divisible_by_16 names runtime arguments only; not: {', '.join(unknown)}")
    options = {"num_warps": num_warps, "num_stages": num_stages}
    if _interpreter_has_run():
        return _compile_in_fresh_process(fn.fn, full, constexprs, options, divisible)
    return _compile_here(fn, full, constexprs, options, divisible)


def _interpreter_has_run() -> bool:
    """True when the interpreter's replacements of Triton's builtins are in place (it does not undo them all)."""
    import triton.language as tl

    is_builtin = getattr(tl.core, "is_builtin", None)
    if is_builtin is None:
        return False
    probes = [getattr(module, name, None) for module in (tl, tl.core) for name in ("arange", "load", "store", "where")]
    return not all(is_builtin(probe) for probe in probes if probe is not None)


def _compile_here(fn, signature: dict[str, str], constexprs: dict[str, object], options: dict, divisible: list[str]) -> CompiledText:
    from triton.backends.compiler import GPUTarget

    source = _ast_source(fn, signature, constexprs, divisible)
    with warnings.catch_warnings():
        # Notices about Triton's own defaults (e.g. 3.9's TRITON_DEFAULT_FP_FUSION) do not concern this compilation.
        warnings.filterwarnings("ignore", module=r"triton(\.|$)")
        with _compilable_language():
            compiled = triton.compile(source, target=GPUTarget(*HOPPER), options=options)
    stages = {stage: compiled.asm[stage] for stage in STAGES[:-1] if stage in compiled.asm}  # Gluon has no TTIR
    sass, resources = _disassemble(compiled.asm["cubin"])
    if sass is not None:
        stages["sass"] = sass
    return CompiledText(
        name=compiled.metadata.name,
        target=f"{HOPPER[0]}:{HOPPER[1]}",
        triton_version=triton.__version__,
        num_warps=compiled.metadata.num_warps,
        num_stages=compiled.metadata.num_stages,
        shared_bytes=compiled.metadata.shared,
        divisible_by_16=tuple(divisible),
        constexprs=constexprs,
        stages=stages,
        resources=resources,
    )


# The child process: find the kernel by module and name, compile it, send the result back.
_CHILD = """
import importlib, pickle, sys
request = pickle.loads(sys.stdin.buffer.read())
sys.path[:] = request["path"]
from tritonperf import asm
kernel = importlib.import_module(request["module"])
for part in request["qualname"].split("."):
    kernel = getattr(kernel, part)
try:
    result = asm.compile_for_hopper(kernel, **request["arguments"])
except Exception as err:
    result = (type(err).__name__, str(err))
with open(request["output"], "wb") as out:
    pickle.dump(result, out)
"""


def _compile_in_fresh_process(fn: types.FunctionType, signature: dict[str, str], constexprs: dict[str, object],
                              options: dict, divisible: list[str]) -> CompiledText:
    import pickle

    where = f"{fn.__module__}.{fn.__qualname__}"
    if fn.__module__ == "__main__" or "<locals>" in fn.__qualname__ or importlib.util.find_spec(fn.__module__) is None:
        raise RuntimeError(
            f"{where} cannot be compiled in this process (the interpreter has run here and left triton.language "
            "modified) nor in a fresh one (it is not importable from a module): compile before running kernels "
            "through the interpreter, or define the kernel in an importable module"
        )
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "result.pickle"
        request = {"path": sys.path, "module": fn.__module__, "qualname": fn.__qualname__, "output": str(output),
                   "arguments": {"signature": {k: v for k, v in signature.items() if v != "constexpr"},
                                 "constexprs": constexprs, "divisible_by_16": divisible, **options}}
        child = subprocess.run([sys.executable, "-c", _CHILD], input=pickle.dumps(request), capture_output=True)
        if child.returncode != 0 or not output.exists():
            tail = child.stderr.decode(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(f"compiling {where} in a fresh process failed: " + " | ".join(tail))
        result = pickle.loads(output.read_bytes())
    if isinstance(result, tuple):
        kind, message = result
        error = {"ValueError": ValueError, "TypeError": TypeError}.get(kind, RuntimeError)
        raise error(f"{kind} while compiling {where} in a fresh process: {message}")
    return result


# -- reading the text ---------------------------------------------------------------------------------
_MLIR_LOC = re.compile(r"\s+loc\((?:[^()]|\([^()]*\))*\)")
_DEBUG_LABEL = re.compile(r"^\$L__(tmp|func_begin|func_end)\d*:$")


def clean(text: str) -> str:
    """Drop what only debuggers read: MLIR locations, PTX ``.loc``/``.file`` lines and DWARF sections,
    inline-asm markers and blank lines. Instructions are left untouched."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(".file") or (stripped.startswith(".section") and "debug" in stripped):
            break  # PTX: the file table and the DWARF sections close the file
        if not stripped or stripped.startswith(("#loc", ".loc", "// begin inline asm", "// end inline asm")):
            continue
        if _DEBUG_LABEL.match(stripped):  # labels that only mark spans for the debugger, not branch targets
            continue
        line = _MLIR_LOC.sub("", line)
        out.append(line.rstrip())
    return "\n".join(out) + "\n"


def grep(text: str, pattern: str, context: int = 0, *, limit: int | None = None) -> str:
    """The lines of ``text`` that match the regular expression ``pattern``, with ``context`` lines around each.

    With context, groups that are not adjacent are separated by a line ``...``. ``limit`` keeps
    the first ``limit`` matches.
    """
    lines = text.splitlines()
    regex = re.compile(pattern)
    hits = [i for i, line in enumerate(lines) if regex.search(line)][:limit]
    keep = sorted({j for i in hits for j in range(max(0, i - context), min(len(lines), i + context + 1))})
    out, previous = [], None
    for j in keep:
        if context and previous is not None and j != previous + 1:
            out.append("...")
        out.append(lines[j])
        previous = j
    return "\n".join(out) + ("\n" if out else "")


def between(text: str, start: str, end: str, *, limit: int | None = None) -> str:
    """Each run of lines from one that matches ``start`` to the next one that matches ``end``, both included.

    Runs are separated by a line ``...``; ``limit`` keeps the first ``limit`` runs.
    """
    lines = text.splitlines()
    begin, finish = re.compile(start), re.compile(end)
    runs, i = [], 0
    while i < len(lines) and (limit is None or len(runs) < limit):
        if begin.search(lines[i]):
            j = next((k for k in range(i + 1, len(lines)) if finish.search(lines[k])), len(lines) - 1)
            runs.append("\n".join(lines[i:j + 1]))
            i = j + 1
        else:
            i += 1
    return "\n...\n".join(runs) + ("\n" if runs else "")


def count(text: str, pattern: str) -> int:
    """How many lines of ``text`` match the regular expression ``pattern``."""
    regex = re.compile(pattern)
    return sum(1 for line in text.splitlines() if regex.search(line))


# Patterns for the things the chapter looks for, usable with grep() and count().
WIDE_GLOBAL_LOAD = r"\bld\.global(\.[\w:]+)*\.v[248]\."  # a vector load: up to 16 bytes per thread in one instruction
WIDE_GLOBAL_STORE = r"\bst\.global(\.[\w:]+)*\.v[248]\."
GLOBAL_LOAD = r"\bld\.global\."
GLOBAL_STORE = r"\bst\.global\."
PREDICATED = r"@%p\d+\s+"  # an instruction that runs only where its predicate (e.g. a mask) is true
SHARED_STORE = r"\bst\.shared(::cta)?\."  # triton 3.8 writes st.shared::cta
SHARED_LOAD = r"\bld\.shared(::cta)?\."
SHARED_MATRIX_LOAD = r"\bldmatrix\.sync\."  # a warp loads 8 x 8 blocks of 16-bit values from shared memory, transposed or not
BARRIER = r"\bbar\.sync\b"
SHUFFLE = r"\bshfl\.sync\."
ASYNC_COPY = r"\bcp\.async\.(ca|cg)\.shared"  # global to shared memory without passing through registers
XOR = r"\bxor\.b(32|64)\b"
MMA = r"\bwgmma\.mma_async\."  # a Tensor Core product of one warpgroup (Hopper)
MMA_WAIT = r"\bwgmma\.wait_group\.sync\.aligned\s+(\d+)"  # wait until at most this many MMA groups are pending
TMA_LOAD = r"\bcp\.async\.bulk\.tensor\.\dd\.shared"  # a tile copied from global to shared memory by the TMA


def loop_around(ptx: str, pattern: str) -> str:
    """The innermost loop of ``ptx`` that holds the first line matching ``pattern``.

    From the loop's label to the branch back to it, both included; the empty string when no line
    matches or the line is in no loop.
    """
    lines = ptx.splitlines()
    regex = re.compile(pattern)
    hit = next((i for i, line in enumerate(lines) if regex.search(line)), None)
    if hit is None:
        return ""
    for start in range(hit, -1, -1):
        label = re.match(r"^(\$L__\w+):", lines[start])
        if not label:
            continue
        back = re.compile(rf"\bbra(\.uni)?\s+{re.escape(label.group(1))};")
        end = next((j for j in range(hit, len(lines)) if back.search(lines[j])), None)
        if end is not None:
            return "\n".join(lines[start:end + 1]) + "\n"
    return ""




# -- the chapter's excerpts ---------------------------------------------------------------------------
EXCERPTS = (
    "versions",
    "vector_add.ttgir", "vector_add.ptx", "vector_add_any_n.ptx", "vector_add.sass", "vector_add.summary",
    "softmax.ttgir", "softmax.ptx", "softmax.summary",
    "transpose.ttgir", "transpose.ptx", "transpose.summary",
    "matmul.ptx", "matmul.summary",
)


def _excerpt_compilations() -> dict[str, CompiledText]:
    """The package's kernels compiled with the arguments their launchers pass for the shapes named below."""
    import torch

    softmax = importlib.import_module("tritonperf.kernels.softmax")
    transpose = importlib.import_module("tritonperf.kernels.transpose")
    vector_add = importlib.import_module("tritonperf.kernels.vector_add")

    add = ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"},
           {"BLOCK_SIZE": vector_add.DEFAULT_BLOCK_SIZE})
    plan = softmax.softmax_plan(4096, 4096, torch.float16)  # the fused path: one 4096-column row in registers
    rows = {"x_ptr": "*fp16", "y_ptr": "*fp16", "n_rows": "i32", "n_cols": "i32", "x_row_stride": "i32", "y_row_stride": "i32"}
    block_m, block_n, warps = transpose.TILE_CONFIGS[4]  # float32 is moved as int32
    tiles = _transpose_signature("*i32")
    return {
        # n_elements a multiple of 16 (every benchmark size is), and n_elements any number.
        "vector_add": compile_for_hopper(vector_add.add_kernel, *add, num_warps=vector_add.DEFAULT_NUM_WARPS,
                                         divisible_by_16=[*add[0]]),
        "vector_add_any_n": compile_for_hopper(vector_add.add_kernel, *add, num_warps=vector_add.DEFAULT_NUM_WARPS),
        "softmax": compile_for_hopper(
            softmax.softmax_fwd_kernel, rows,
            {"BLOCK_N": plan.block_n, "ROWS": plan.rows_per_program, "NUM_STAGES": plan.num_stages, "ONE_BLOCK": True},
            num_warps=plan.num_warps, num_stages=plan.num_stages, divisible_by_16=[*rows],
        ),
        # A contiguous 4096 x 4096 matrix: unit column stride (a launch makes that argument a constant), no masks.
        "transpose": compile_for_hopper(
            transpose.transpose_kernel, tiles,
            {"stride_xn": 1, "BLOCK_M": block_m, "BLOCK_N": block_n, "GROUP_M": transpose.DEFAULT_GROUP_M,
             "MASKED": False, "INT64": False, "PERSISTENT": False},
            num_warps=warps, divisible_by_16=[*tiles],
        ),
        **_matmul_compilations(),
    }


def _transpose_signature(pointer: str) -> dict[str, str]:
    """``transpose_kernel``'s runtime arguments with pointers of type ``pointer``; ``stride_xn`` is left
    out: a contiguous input makes it 1, which a launch turns into a constant."""
    return {"x_ptr": pointer, "y_ptr": pointer, "M": "i32", "N": "i32", "stride_xb": "i32", "stride_xm": "i32",
            "tiles_m": "i32", "tiles_n": "i32", "n_tiles": "i32"}


def transpose_compilations() -> dict[str, CompiledText]:
    """Steps 4 and 6 of the transpose lesson, ``"tiles"`` and ``"pairs"``, as
    :func:`tritonperf.transpose` launches them for a contiguous float16 matrix whose sizes are
    multiples of 16 (every aligned benchmark shape): the tiles of ``TILE_CONFIGS`` and
    ``PAIR_CONFIGS`` for 2-byte elements, one tile a program, no masks."""
    transpose = importlib.import_module("tritonperf.kernels.transpose")
    fixed = {"stride_xn": 1, "GROUP_M": transpose.DEFAULT_GROUP_M, "MASKED": False, "INT64": False, "PERSISTENT": False}
    out = {}
    for name, pointer, (block_m, block_n, warps), pair_bits in [
        ("tiles", "*i16", transpose.TILE_CONFIGS[2], 0),  # float16 moved as int16 ...
        ("pairs", "*i32", transpose.PAIR_CONFIGS[2], 16),  # ... or as pairs in int32
    ]:
        signature = _transpose_signature(pointer)
        out[name] = compile_for_hopper(
            transpose.transpose_kernel, signature,
            {**fixed, "BLOCK_M": block_m, "BLOCK_N": block_n, "PAIR_BITS": pair_bits},
            num_warps=warps, divisible_by_16=[*signature],
        )
    return out


def _matmul_compilations() -> dict[str, CompiledText]:
    """Both matmul kernels for a float16 product of 4096 x 4096 row-major matrices (every size and
    stride a multiple of 16), unbatched, in one of the autotuner's configs: 128 x 128 tiles, 4
    stages, 8 warps."""
    matmul = importlib.import_module("tritonperf.kernels.matmul")
    block_m, block_n, stages, warps = config = (128, 128, 4, 8)
    if config not in matmul.CONFIG_TILES:
        raise ValueError(f"the excerpt's config {config} is no longer one of the autotuner's")
    sizes = ["M", "N", "K", "M_BUCKET", "N_BUCKET", "K_BUCKET"]
    strides = ["stride_ab", "stride_am", "stride_bb", "stride_bk", "stride_cb", "stride_cm"]
    pointers = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "bias_ptr": "*fp16",
                "scale_a_ptr": "*fp32", "scale_b_ptr": "*fp32"}
    consts = {"stride_ak": 1, "stride_bn": 1, "BLOCK_M": block_m, "BLOCK_N": block_n,
              "BLOCK_K": matmul.K_TILE_BYTES // 2, "GROUP_M": matmul.DEFAULT_GROUP_M, "HAS_BIAS": False,
              "HAS_SCALES": False, "ACTIVATION": None, "INPUT_PRECISION": "tf32"}
    signature = {**pointers, **dict.fromkeys([*strides, *sizes], "i32")}  # the same in both kernels
    return {
        "matmul": compile_for_hopper(
            matmul.matmul_tma_kernel, signature,
            {**consts, "BATCH": 1, "A_BATCHED": False, "B_BATCHED": False, "C_BATCHED": False,
             "A_TRANSPOSED": False, "B_TRANSPOSED": False},
            num_warps=warps, num_stages=stages, divisible_by_16=[*signature],
        ),
        "matmul_tiles": compile_for_hopper(
            matmul.matmul_kernel, signature, {**consts, "stride_cn": 1, "INT64": False},
            num_warps=warps, num_stages=stages, divisible_by_16=[*signature],
        ),
    }


def _header(c: CompiledText, what: str) -> str:
    return f"// {what}\n// {c.name}, num_warps={c.num_warps}, num_stages={c.num_stages}, compiled for {c.target}\n"


def _resources(c: CompiledText) -> str:
    if c.resources is None:
        return "registers, local memory: not shown (this Triton carries no cuobjdump)"
    r = c.resources
    return f"registers per thread: {r.registers}; local memory per thread, stack frame included (spills): {r.local_memory_bytes} bytes"


def _mma_loop(c: CompiledText, loop: str, copies: str) -> str:
    # What one step of a matmul's loop over K issues, and what the kernel asks of the SM.
    shape = re.search(r"\bwgmma\.mma_async\.[\w.]*?\.(m\d+n\d+k\d+)\.", loop)
    waits = ", ".join(re.findall(MMA_WAIT, loop)) or "none"
    return (f"a step of the loop over K issues {copies} and {count(loop, MMA)} wgmma.mma_async "
            f"({shape.group(1) if shape else 'no shape found'}) a warpgroup, then waits until {waits} group(s) of "
            f"products remain in flight\n  shared memory per program: {c.shared_bytes:,} bytes; {_resources(c)}\n")


def _excerpt_texts(c: dict[str, CompiledText]) -> dict[str, str]:
    add, any_n, soft, trans = c["vector_add"], c["vector_add_any_n"], c["softmax"], c["transpose"]
    ptx = {name: clean(compiled.ptx) for name, compiled in c.items()}
    ttgir = {name: clean(compiled.ttgir) for name, compiled in c.items()}
    texts = {}

    disassembler = "nvdisasm" if find_tool("nvdisasm") else "cuobjdump" if find_tool("cuobjdump") else "none found"
    texts["versions"] = (f"triton {triton.__version__}, target {add.target} (PTX for sm_90a), "
                         f"ptxas from CUDA {(ptxas_for_hopper() or ('', 'unknown'))[1]}, SASS by {disassembler}\n")

    texts["vector_add.ttgir"] = _header(add, "TTGIR: the layout, the two loads and the store") + grep(
        ttgir["vector_add"], r"^#blocked|tt\.load|tt\.store")
    texts["vector_add.ptx"] = _header(add, "PTX, n_elements a multiple of 16: masks, loads, additions, stores") + grep(
        ptx["vector_add"], r"setp\.|ld\.global|add\.f32|st\.global")
    texts["vector_add_any_n.ptx"] = _header(any_n, "PTX, n_elements any number: the loads of x") + grep(
        ptx["vector_add_any_n"], GLOBAL_LOAD, limit=8)
    if add.sass is not None:
        texts["vector_add.sass"] = _header(add, "SASS, n_elements a multiple of 16: global loads (LDG) and stores (STG)") + grep(
            add.sass, r"\b(LDG|STG)\b")
    else:
        texts["vector_add.sass"] = "// no SASS: this Triton carries neither nvdisasm nor cuobjdump\n"
    summary = []
    for name, what in (("vector_add", "n_elements a multiple of 16"), ("vector_add_any_n", "n_elements any number")):
        summary.append(f"{what}:\n  PTX per thread: {count(ptx[name], GLOBAL_LOAD)} global loads, "
                       f"{count(ptx[name], WIDE_GLOBAL_LOAD)} of them 16-byte vectors; "
                       f"{count(ptx[name], GLOBAL_STORE)} global stores, {count(ptx[name], WIDE_GLOBAL_STORE)} of them 16-byte vectors\n"
                       f"  {_resources(c[name])}")
    texts["vector_add.summary"] = "\n".join(summary) + "\n"

    texts["softmax.ttgir"] = _header(soft, "TTGIR: the layout, the load, the two reductions (max, then sum), the store") + (
        grep(ttgir["softmax"], r"^#blocked|tt\.load") + "...\n"
        + between(ttgir["softmax"], r"\"tt\.reduce\"", r"^\s*\}\)") + "...\n" + grep(ttgir["softmax"], r"tt\.store"))
    # The row maximum: from the first shuffle to the shuffles that follow the read back from shared memory.
    steps = grep(ptx["softmax"], r"shfl\.sync|st\.shared|ld\.shared|bar\.sync|max\.f32").splitlines()
    first = next((i for i, line in enumerate(steps) if "shfl.sync" in line), 0)
    last = next((i for i in range(first, len(steps)) if "ld.shared" in steps[i]), len(steps) - 1)
    while last + 1 < len(steps) and ("shfl.sync" in steps[last + 1] or "max.f32" in steps[last + 1]):
        last += 1
    texts["softmax.ptx"] = _header(soft, "PTX: the row maximum, first within each warp, then across the warps") + (
        "\n".join(steps[first:last + 1]) + "\n")
    texts["softmax.summary"] = (
        f"shared memory per program: {soft.shared_bytes:,} bytes\n"
        f"PTX per thread: {count(ptx['softmax'], WIDE_GLOBAL_LOAD)} 16-byte global loads, "
        f"{count(ptx['softmax'], SHUFFLE)} warp shuffles, {count(ptx['softmax'], BARRIER)} barriers, "
        f"{count(ptx['softmax'], WIDE_GLOBAL_STORE)} 16-byte global stores\n{_resources(soft)}\n")

    texts["transpose.ttgir"] = _header(trans, "TTGIR: the two layouts, then load, transposition, conversion, store") + grep(
        ttgir["transpose"], r"^#blocked|tt\.load|tt\.trans|ttg\.convert_layout|tt\.store")
    p = ptx["transpose"]
    texts["transpose.ptx"] = _header(trans, "PTX: global loads, into shared memory, barrier, out of it, global stores") + (
        grep(p, r"ld\.global") + grep(p, r"st\.shared", limit=4) + "...\n" + grep(p, r"bar\.sync")
        + grep(p, r"ld\.shared", limit=4) + "...\n" + grep(p, r"st\.global"))
    block_m, block_n = trans.constexprs["BLOCK_M"], trans.constexprs["BLOCK_N"]
    texts["transpose.summary"] = (
        f"shared memory per program: {trans.shared_bytes:,} bytes (a {block_m} x {block_n} tile of 4-byte elements "
        f"is {block_m * block_n * 4:,} bytes)\n"
        f"PTX per thread: {count(p, WIDE_GLOBAL_LOAD)} 16-byte global loads, {count(p, SHARED_STORE)} shared stores, "
        f"{count(p, BARRIER)} barrier(s), {count(p, SHARED_LOAD)} shared loads, "
        f"{count(p, WIDE_GLOBAL_STORE)} 16-byte global stores\n"
        f"XOR instructions in the address arithmetic (the kernel computes nothing else): {count(p, XOR)}\n"
        f"{_resources(trans)}\n")

    mm, mm_tiles = c["matmul"], c["matmul_tiles"]
    loop, loop_tiles = loop_around(ptx["matmul"], MMA), loop_around(ptx["matmul_tiles"], MMA)
    # The 64 accumulator registers of each MMA are listed in full in the PTX; one mention is enough.
    shortened = re.sub(r"\{\s*%r\d+(?:\s*,\s*%r\d+){7,}\s*\}", lambda m: f"{{ {m.group(0).count('%r')} registers }}",
                       grep(loop, r"^\$L__|mbarrier|wgmma|cp\.async|\bbra"))
    texts["matmul.ptx"] = _header(mm, "PTX: the loop over K (copies, waits and Tensor Core products)") + shortened
    m, n, k = (mm.constexprs[name] for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    texts["matmul.summary"] = (
        f"tile: {m} x {n}, K in steps of {k} float16 elements; {mm.num_warps} warps, "
        f"that is {mm.num_warps // 4} warpgroups of 4\n"
        f"{mm.num_stages} stages: {mm.num_stages} tiles of A ({m} x {k}) and {mm.num_stages} of B ({k} x {n}), "
        f"{mm.num_stages * (m + n) * k * 2:,} bytes\n"
        f"matmul_tma_kernel: {_mma_loop(mm, loop, f'{count(loop, TMA_LOAD)} TMA copies (cp.async.bulk.tensor)')}"
        f"matmul_kernel: {_mma_loop(mm_tiles, loop_tiles, f'{count(loop_tiles, ASYNC_COPY)} cp.async copies a thread')}")
    return texts


def write_excerpts(directory: str | Path) -> list[Path]:
    """Compile the package's kernels for sm_90 and write the excerpts the docs include, one ``<name>.txt`` each.

    Never raises because of the installed Triton: when it cannot compile, every file says why,
    and the docs still build. Returns the files written.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    try:
        texts = _excerpt_texts(_excerpt_compilations())
    except Exception as err:  # any failure becomes a note on the page rather than a broken build
        texts = dict.fromkeys(EXCERPTS, f"// not available: compiling for sm_90 with triton {triton.__version__} "
                                        f"failed ({type(err).__name__}: {err})\n")
    paths = []
    for name in EXCERPTS:
        path = out / f"{name}.txt"
        path.write_text(texts[name])
        paths.append(path)
    return paths
