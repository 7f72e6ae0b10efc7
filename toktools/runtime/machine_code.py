"""Compiled kernels kept as machine code in the user cache, and loaded again without numba.

numba compiles a kernel in 1-3 s, and even from its own cache, loading one costs each process
about 0.4 s: importing numba (~0.2 s), then setting up its typing and target contexts on the
first call (~0.2 s). That is most of what encoding 5 MB of text takes. This module avoids the
cost for kernels written over raw pointers and integers:

* **Compile once** (numba, in :func:`_compile`). The kernel is compiled without numba's
  wrappers. It makes no array and raises no exception, so it never calls back into numba's
  runtime: the function is self-contained machine code. Its object code is stored in the user
  cache (:mod:`toktools.io.user_cache`). The key covers the sources of the kernel's module, of
  the modules it imports and of this one, the numba and llvmlite versions, and this CPU, so a
  home shared by several machines keeps one entry each. One process compiles a kernel at a time
  (:func:`compile_into_cache`; the others wait for its entry). A job that would rather not wait
  can have it compiled in a detached process (:mod:`toktools.runtime.background_compile`).
* **Load many times** (llvmlite alone, in :func:`_load`, ~0.03 s). The stored object is loaded
  into an MCJIT engine, as numba loads its own cache, and the function is called through
  ctypes, which releases the GIL during the call.

Where the cache is off (``TOKTOOLS_CACHE_DIR=``) or the object path fails on some platform,
numba's ``cfunc`` of the same kernel is used instead: the same code, loaded the slow way (numba
``cache=True``).

A kernel is a plain Python function in a module that imports numba (e.g.
:mod:`toktools.models.bpe.kernels`). Its parameters are ``int64`` and ``uint64`` scalars and pointers
(``"int64*"``, ``"uint64*"``, ``"uint32*"``, ``"uint8*"``, ``"float64*"``; the kernel wraps them with
``numba.carray``), and it
returns an ``int64``. The caller states these parameter types, so a cache hit never imports the
kernel's module.
"""

from __future__ import annotations

import ctypes
import hashlib
import marshal
from collections.abc import Callable, Sequence
from typing import Any

_CTYPES = {
    "int64": ctypes.c_int64,
    "uint64": ctypes.c_uint64,
    "int64*": ctypes.c_void_p,
    "uint64*": ctypes.c_void_p,
    "uint32*": ctypes.c_void_p,
    "uint8*": ctypes.c_void_p,
    "float64*": ctypes.c_void_p,
}

#: Kernels loaded in this process, by (module, function, parameters).
_loaded: dict[tuple[str, str, tuple[str, ...]], Callable[..., int] | None] = {}
#: The MCJIT engines holding loaded code: the code lives as long as its engine.
_engines: list[Any] = []


def kernel(module: str, function: str, parameters: Sequence[str]) -> Callable[..., int] | None:
    """``module.function`` compiled, as a callable taking Python ints (addresses for pointers)
    and returning the kernel's ``int64``; ``None`` when numba is not installed (the key names
    numba's version, so code it compiled is not used without it) or cannot compile the kernel.
    Loaded once per process."""
    key = (module, function, tuple(parameters))
    if key not in _loaded:
        unknown = [p for p in parameters if p not in _CTYPES]
        if unknown:
            raise ValueError(f"kernel parameter types {unknown} are not among {sorted(_CTYPES)}")
        _loaded[key] = _cached_kernel(*key) or _numba_cfunc(*key)
    return _loaded[key]


def ready(module: str, function: str, parameters: Sequence[str]) -> bool:
    """Whether the kernel is loaded in this process or its machine code is in the user cache:
    :func:`kernel` then costs milliseconds, where compiling it costs seconds."""
    if (module, function, tuple(parameters)) in _loaded:
        return _loaded[(module, function, tuple(parameters))] is not None
    path = _entry_path(module, function, tuple(parameters))
    return (path is not None and path.exists()) or shipped_ir(module, function, parameters) is not None


def _cached_kernel(module: str, function: str, parameters: tuple[str, ...]) -> Callable[..., int] | None:
    """The kernel from its cached object code (compiled and stored first on a miss; made from the
    shipped IR where the cache is off), or None when the object path fails here."""
    from toktools.io.user_cache import read_blob

    path = _entry_path(module, function, parameters)
    if path is None:  # no cache: only the shipped IR is quick enough to turn into code every time
        if shipped_ir(module, function, parameters) is None:
            return None
        try:
            return _callable(module, function, parameters, _compile(module, function, parameters))
        except Exception:  # noqa: BLE001 - an LLVM that cannot read it after all: numba's own way
            return None
    entry = _read_entry(read_blob(path))
    if entry is None:
        try:
            entry = compile_into_cache(module, function, parameters, wait=True)
        except Exception:  # noqa: BLE001 - no numba, or an LLVM that cannot do this: numba's own way
            return None
        if entry is None:
            return None
    return _callable(module, function, parameters, entry)


def _callable(
    module: str, function: str, parameters: tuple[str, ...], entry: tuple[str, bytes]
) -> Callable[..., int] | None:
    """The kernel's object code loaded and wrapped for Python ints, or None where it cannot be
    loaded here."""
    symbol, code = entry
    try:
        address = _load(code, symbol)
    except Exception:  # noqa: BLE001 - an llvmlite that cannot load it: numba's own way
        return None
    native = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, *[_CTYPES[p] for p in parameters])(
        address
    )

    def call(*args: int) -> int:
        result = ctypes.c_int64()
        status = native(ctypes.byref(result), None, *args)
        if status != 0:  # numba's status of a raised exception: the kernels raise none
            raise RuntimeError(f"compiled kernel {module}.{function} failed (status {status})")
        return result.value

    call.native = native  # type: ignore[attr-defined]  # kept alive with the callable
    return call


def compile_into_cache(
    module: str, function: str, parameters: Sequence[str], *, wait: bool
) -> tuple[str, bytes] | None:
    """The kernel's ``(symbol, object code)``, compiled and stored in the user cache unless it is
    there, one process at a time (:func:`toktools.runtime.compile_lock.compile_lock`:
    a process that finds another compiling it waits, then reads its entry). None when the cache
    is off or, with ``wait=False``, another process is compiling it. Raises where numba cannot
    compile it."""
    from toktools.io.user_cache import read_blob, write_blob
    from toktools.runtime.compile_lock import compile_lock

    path = _entry_path(module, function, tuple(parameters))
    if path is None:
        return None
    with compile_lock(path, wait=wait) as held:
        if not held:
            return None
        entry = _read_entry(read_blob(path))
        if entry is None:
            entry = _compile(module, function, tuple(parameters))
            write_blob(path, marshal.dumps(entry))  # (an unwritable cache: used once, here)
    return entry


def entry_path(module: str, function: str, parameters: Sequence[str]) -> Any:
    """Where the kernel's machine code is kept in the user cache (a ``Path``), or None."""
    return _entry_path(module, function, tuple(parameters))


def _read_entry(payload: bytes | None) -> tuple[str, bytes] | None:
    if payload is None:
        return None
    try:
        entry = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], bytes):
        return entry
    return None


def _entry_path(module: str, function: str, parameters: tuple[str, ...]) -> Any:
    """Where the kernel's object code is kept, or None (cache off, module or llvmlite missing):
    named by the kernel and a hash of its parameters and of the host it is compiled for (the CPU,
    its features), keyed (:func:`toktools.io.user_cache.entry_path`) by the sources of
    :func:`_kernel_modules` and the numba and llvmlite versions."""
    from toktools.io.user_cache import cache_root, entry_path

    if cache_root() is None:
        return None
    try:
        modules = _kernel_modules(module)
        llvm = _llvm()
        host = (llvm.get_process_triple(), llvm.get_host_cpu_name(), _host_features(llvm))
    except (ImportError, OSError, AttributeError, TypeError, ValueError):
        return None
    target = hashlib.sha256(repr((parameters, host)).encode()).hexdigest()[:16]
    return entry_path(
        "native-code", f"{module}.{function}-{target}", ".bin", modules=modules, libraries=("numba", "llvmlite")
    )


def _kernel_modules(module: str) -> tuple[str, ...]:
    """The modules whose code the kernel's machine code depends on: :func:`kernel_modules` and
    this one (how it is compiled)."""
    return (*kernel_modules(module), __name__)


def kernel_modules(module: str) -> tuple[str, ...]:
    """The modules whose sources a compiled kernel of ``module`` is made from: ``module`` and the
    toktools modules it imports (numba compiles their constants and the kernels it calls from
    them into the code, e.g. a hash table's layout)."""
    import re

    from toktools.io.user_cache import module_source

    text = module_source(module).decode("utf-8")
    imported = sorted(set(re.findall(r"^(?:from|import) (toktools[\w.]*)", text, re.M)) - {module, __name__})
    return (module, *imported)


def _llvm() -> Any:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


def _host_features(llvm: Any) -> str:
    try:
        return llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # some platforms cannot list them: the CPU name decides
        return ""


def _target_machine(llvm: Any) -> Any:
    """A target machine for this CPU with the options numba's JIT uses (static relocation on
    x86, position-independent code on POWER), for both emitting and loading object code."""
    target = llvm.Target.from_triple(llvm.get_process_triple())
    arch = target.name
    reloc = "static" if arch.startswith("x86") else "pic" if arch.startswith("ppc") else "default"
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=_host_features(llvm),
        opt=3,
        reloc=reloc,
        codemodel="jitdefault",
        jit=True,
    )


def _numba_signature(parameters: Sequence[str]) -> Any:
    from numba import types

    scalar = {"int64": types.int64, "uint64": types.uint64}
    pointer = {
        "int64*": types.int64,
        "uint64*": types.uint64,
        "uint32*": types.uint32,
        "uint8*": types.uint8,
        "float64*": types.float64,
    }
    return types.int64(*[scalar[p] if p in scalar else types.CPointer(pointer[p]) for p in parameters])


def _compile(module: str, function: str, parameters: tuple[str, ...]) -> tuple[str, bytes]:
    """``(symbol, object code)`` of the kernel for this CPU: from the LLVM IR shipped with
    toktools when it applies here (:func:`shipped_ir`, a tenth of a second), or compiled by numba
    (seconds); raises where numba cannot compile it or the kernel needs anything from outside."""
    llvm = _llvm()
    symbol, ir = shipped_ir(module, function, parameters) or lower(module, function, parameters)
    ir_module = llvm.parse_assembly(ir)
    ir_module.verify()
    return symbol, _target_machine(llvm).emit_object(ir_module)


def lower(module: str, function: str, parameters: Sequence[str]) -> tuple[str, str]:
    """``(symbol, LLVM IR)`` of the kernel lowered and optimised by numba, stripped to the one
    function and what it calls; raises where that function needs anything from outside."""
    import importlib
    import re

    from numba import njit

    pyfunc = getattr(importlib.import_module(module), function)
    signature = _numba_signature(parameters)
    # real compiler flags (numba sets both for its own cfunc), absent from numba's typed overloads
    dispatcher = njit(signature, no_cpython_wrapper=True, no_cfunc_wrapper=True)(pyfunc)  # type: ignore[call-overload]
    compiled = dispatcher.overloads[signature.args]
    symbol = compiled.fndesc.mangled_name
    llvm = _llvm()
    ir_module = llvm.parse_assembly(compiled.library.get_llvm_str())
    for defined in ir_module.functions:  # numba's helpers that the kernel never calls (NRT_decref) go
        if defined.name != symbol and not defined.is_declaration:
            defined.linkage = "internal"
    machine = _target_machine(llvm)
    passes = llvm.create_new_module_pass_manager()
    passes.add_global_dead_code_eliminate_pass()
    passes.add_strip_dead_prototype_pass()
    passes.run(ir_module, llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=0)))
    ir_module.verify()
    outside = [
        name
        for name in re.findall(r"^declare [^@]*@\"?([^\"(]+)", str(ir_module), re.M)
        if not name.startswith("llvm.")
    ]
    if outside:
        raise RuntimeError(f"kernel {module}.{function} calls {outside}: not self-contained")
    return symbol, str(ir_module)


def source_key(module: str) -> str:
    """The sha256 of the sources a kernel's IR is lowered from: ``module`` and the toktools
    modules it imports (not this one, which only says how IR becomes machine code)."""
    from toktools.io.user_cache import code_fingerprint

    return code_fingerprint(*kernel_modules(module))


def shipped_ir(module: str, function: str, parameters: Sequence[str]) -> tuple[str, str] | None:
    """``(symbol, LLVM IR)`` of the kernel as shipped in :mod:`toktools.tables.lowered_kernels`
    (``scripts/gen_lowered_kernels.py``), when it applies here: lowered from the current sources,
    with these parameter types, by this LLVM major version (IR text changes between them), for
    this kind of machine (the process triple). None otherwise: numba compiles it then."""
    try:
        from toktools.tables.lowered_kernels import KERNELS
    except ImportError:
        return None
    record = KERNELS.get(f"{module}.{function}")
    if record is None or tuple(record["parameters"]) != tuple(parameters):
        return None
    try:
        llvm = _llvm()
        if record["llvm"] != llvm.llvm_version_info[0] or record["triple"] != llvm.get_process_triple():
            return None
        if record["sources"] != source_key(module):
            return None
    except (ImportError, OSError, AttributeError, TypeError, ValueError):
        return None
    return str(record["symbol"]), "".join(record["ir"])


def _load(code: bytes, symbol: str) -> int:
    """The address of ``symbol`` in ``code`` loaded into a new MCJIT engine (kept alive)."""
    llvm = _llvm()
    machine = _target_machine(llvm)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    address = engine.get_function_address(symbol)
    if not address:
        raise RuntimeError(f"{symbol} not found in the cached object code")
    _engines.append(engine)
    return address


def _numba_cfunc(module: str, function: str, parameters: tuple[str, ...]) -> Callable[..., int] | None:
    """The kernel as numba's ``cfunc`` (its own on-disk cache), or None without numba, or with a
    numba that cannot compile it (the callers then run their Python steps: same results)."""
    import importlib

    try:
        from numba import cfunc
    except ImportError:
        return None
    try:
        pyfunc = getattr(importlib.import_module(module), function)
        compiled = cfunc(_numba_signature(parameters), cache=True)(pyfunc)
    except Exception:  # noqa: BLE001 - numba's errors have no common base worth naming
        return None
    if compiled.address is None:  # not compiled after all
        return None
    native = ctypes.CFUNCTYPE(ctypes.c_int64, *[_CTYPES[p] for p in parameters])(compiled.address)  # addresses as ints

    def call(*args: int) -> int:
        return native(*args)

    call.native = compiled  # type: ignore[attr-defined]
    return call
