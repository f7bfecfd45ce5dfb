"""Compile every CUDA kernel minitorch defines to PTX for real GPUs, with NVIDIA's compiler and no GPU (`make cuda-compile`).

Run in the separate environment `.venv-cuda` (numba-cuda and its CUDA 12 wheels) with the simulator off.
Kernels are found, not listed: every kernel object at module level in a `minitorch` module, every
kernel held by the functions of `TensorBackend(CudaOps)` (the map, zip and reduce kernels its factories
build, one per float function, and for the reduce kernels one per dtype), and every kernel held by what a
module's kernel factory returns for that backend (a module-level function `*_kernels(backend)`, or the
`kernels(backend)` of each operation `tensor_functions.elementwise` made, or `*_kernels(backend, dtype)`, asked once per storage dtype,
as `gelu_kernels`). Each is compiled with the
signatures it is launched with, read from its annotations (`Storage` is a contiguous array of the tensors'
dtype, once float64 and once float32; `Shape`/`Strides` contiguous int64 arrays, `int` an int64, `float`
a float64), for every architecture in `ARCHITECTURES`, then assembled to machine code with `ptxas` from the
same wheels (which reports each kernel's registers). Exit status 1 on any error.
"""
import importlib
import importlib.metadata
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
import time
import types
import typing
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numba
import numpy as np
import numpy.typing as npt

ARCHITECTURES = ((7, 5), (8, 0), (9, 0))
"Compute capabilities compiled for: Turing (T4), Ampere (A100), Hopper (H100)."

ANNOTATION_TYPES = {
    npt.NDArray[np.float64]: numba.float64[::1],
    npt.NDArray[np.int64]: numba.int64[::1],
    int: numba.int64,
    float: numba.float64,
    bool: numba.boolean,
}
"The numba type a kernel argument with this annotation is launched with (a `Storage` in float64; see `STORAGE_DTYPES`)."
STORAGE_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
"The dtypes of tensor storages every kernel is compiled for."
REGISTERS_PER_BLOCK = 64 * 1024
"32-bit registers one block may use on every architecture above."
REGISTER_GRANULE = 8
"Registers are handed to threads in multiples of this many, and to blocks a warp at a time."
WARP = 32
"Threads per warp."


def launch_signature(py_func: Callable, storage: np.dtype = STORAGE_DTYPES[0]) -> tuple[Any, ...]:
    "The argument types `py_func` is launched with for tensors of dtype `storage`, from its annotations."
    hints = typing.get_type_hints(py_func)
    names = py_func.__code__.co_varnames[:py_func.__code__.co_argcount]
    unknown = [name for name in names if hints.get(name) not in ANNOTATION_TYPES]
    if unknown:
        raise ValueError(f"kernel {py_func.__qualname__}: arguments {unknown} have no annotation among "
                         f"Storage, Shape, Strides, int, float, bool, so their launch type is unknown")
    types_by_hint = {**ANNOTATION_TYPES, npt.NDArray[np.float64]: numba.from_dtype(storage)[::1]}
    return tuple(types_by_hint[hints[name]] for name in names)


def is_kernel(value: Any, kernel_type: type) -> bool:
    "Whether `value` is a CUDA kernel (a `cuda.jit` function that is not a device function)."
    return isinstance(value, kernel_type) and not getattr(value, "targetoptions", {}).get("device", False)


Compilation = tuple[Any, np.dtype]
"A kernel and the dtype of the tensor storages it is compiled for."


def module_kernels(package: types.ModuleType, kernel_type: type) -> dict[str, Compilation]:
    "Every kernel bound to a name at module level in `package`'s modules, by `module.name dtype`, for each dtype."
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if is_kernel(value, kernel_type) and value.py_func.__module__ == module.__name__:
                found.update({f"{info.name}.{name} {dtype.name}": (value, dtype) for dtype in STORAGE_DTYPES})
    return found


def held_kernels(function: Any, kernel_type: type, per_dtype_type: type, depth: int = 3) -> list[Compilation]:
    "The kernels in `function`'s closure or in the closures of the functions it holds, for each storage dtype."
    found = []
    for cell in getattr(function, "__closure__", None) or ():
        value = cell.cell_contents
        if is_kernel(value, kernel_type):
            found += [(value, dtype) for dtype in STORAGE_DTYPES]
        elif isinstance(value, per_dtype_type):  # one kernel per dtype, made on request
            found += [(value[dtype], dtype) for dtype in STORAGE_DTYPES]
        elif depth and callable(value):
            found += held_kernels(value, kernel_type, per_dtype_type, depth - 1)
    return found


def backend_kernels(backend: Any, kernel_type: type, per_dtype_type: type) -> dict[str, Compilation]:
    "Every kernel held by one of `backend`'s functions, by `attribute:kernel name dtype`."
    return {f"{attribute}:{kernel.py_func.__name__} {dtype.name}": (kernel, dtype)
            for attribute, value in vars(backend).items()
            for kernel, dtype in held_kernels(value, kernel_type, per_dtype_type)}


def ptxas_path() -> str | None:
    "The PTX assembler shipped in the nvidia-cuda-nvcc wheel, if installed."
    try:
        package = importlib.import_module("nvidia.cuda_nvcc")
    except ImportError:
        return None
    for folder in package.__path__:
        candidate = f"{folder}/bin/ptxas"
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def assemble(ptxas: str, ptx: str, architecture: tuple[int, int]) -> int:
    "Assemble `ptx` to machine code for `architecture` with ptxas; the registers per thread it reports."
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as source:
        source.write(ptx)
        source.flush()
        answer = subprocess.run([ptxas, f"-arch=sm_{architecture[0]}{architecture[1]}", "-v", "-o", "/dev/null",
                                 source.name], capture_output=True, text=True)
    if answer.returncode != 0:
        raise RuntimeError(f"ptxas failed: {answer.stderr.strip()}")
    registers = re.findall(r"Used (\d+) registers", answer.stderr)
    return max(int(count) for count in registers) if registers else 0


@contextmanager
def compiling_for(architecture: tuple[int, int]) -> Iterator[None]:
    "Device functions compile for the current device's compute capability: pretend one of `architecture`."
    dispatcher_module = importlib.import_module("numba.cuda.dispatcher")
    original = dispatcher_module.get_current_device
    dispatcher_module.get_current_device = lambda: types.SimpleNamespace(compute_capability=architecture)
    try:
        yield
    finally:
        dispatcher_module.get_current_device = original


def device_functions(kernels: dict[str, Compilation], kernel_type: type) -> list[Any]:
    "The device functions the kernels call (by global name or from their closure), and those these call."
    found, pending = {}, [kernel.py_func for kernel, _ in kernels.values()]
    while pending:
        py_func = pending.pop()
        referenced = [py_func.__globals__.get(name) for name in py_func.__code__.co_names]
        referenced += [cell.cell_contents for cell in py_func.__closure__ or ()]
        for value in referenced:
            if isinstance(value, kernel_type) and id(value) not in found and not is_kernel(value, kernel_type):
                found[id(value)] = value
                pending.append(value.py_func)
    return list(found.values())


def compile_all(kernels: dict[str, Compilation], devices: list[Any], ptxas: str | None) -> list[str]:
    "Compile (and assemble, with ptxas) each kernel for each architecture, one line per pair; the failures."
    from numba import cuda
    failures = []
    width = max(len(name) for name in kernels)
    for architecture in ARCHITECTURES:
        arch = f"sm_{architecture[0]}{architecture[1]}"
        for device_function in devices:
            device_function.overloads.clear()  # compile them again, for this architecture
        with compiling_for(architecture):
            for name, (kernel, dtype) in kernels.items():
                started = time.perf_counter()
                try:
                    signature = launch_signature(kernel.py_func, dtype)
                    ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=architecture)
                    assembled = ""
                    if ptxas:
                        registers = assemble(ptxas, ptx, architecture)
                        allocated = -(-max(registers, 1) // REGISTER_GRANULE) * REGISTER_GRANULE
                        assembled = (f", {registers:3d} registers/thread "
                                     f"(blocks up to {min(1024, REGISTERS_PER_BLOCK // (allocated * WARP) * WARP)} threads)")
                    print(f"ok    {name:{width}}  {arch}  {len(ptx):6d} chars of PTX{assembled}  "
                          f"{time.perf_counter() - started:5.2f} s", flush=True)
                except Exception as error:  # every compiler failure is reported, then the run fails
                    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
                    failures.append(f"{name} {arch}: {type(error).__name__}: {first_line}")
                    print(f"FAIL  {name:{width}}  {arch}  {type(error).__name__}: {error}", flush=True)
    return failures


def factory_kernels(package: types.ModuleType, backend: Any, kernel_type: type,
                    per_dtype_type: type) -> dict[str, Compilation]:
    "Every kernel held by what each module-level `*_kernels(backend)` of `package` returns for `backend`."
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if not (name.endswith("_kernels") and callable(value) and getattr(value, "__module__", None) == module.__name__
                    and list(typing.get_type_hints(value).values())[:1] == [type(backend)]):
                continue  # not a factory taking a backend (conv's `uses_course_kernels` takes a tensor)
            # a factory that also takes a dtype (chapter 5's `gelu_kernels`) is asked once for each storage dtype
            takes_dtype = len(inspect.signature(value).parameters) > 1
            asked = [(f"({dtype.name})", value(backend, dtype)) for dtype in STORAGE_DTYPES] if takes_dtype else [("", value(backend))]
            for asked_for, made in asked:
                functions = [f for part in (made.values() if isinstance(made, dict) else [made])
                             for f in (part if isinstance(part, tuple) else (part,))]
                found.update({f"{info.name}.{name}{asked_for}:{kernel.py_func.__name__}#{position} {dtype.name}": (kernel, dtype)
                              for position, function in enumerate(functions)
                              for kernel, dtype in held_kernels(function, kernel_type, per_dtype_type)})
    # the elementwise operations of `tensor_functions.elementwise` keep their factory on the Function (`Tanh.kernels`)
    elementwise = importlib.import_module(f"{package.__name__}.tensor_functions").ELEMENTWISE
    for name, function_class in elementwise.items():
        found.update({f"{function_class.__module__.split('.')[-1]}.{name}.kernels:{kernel.py_func.__name__}#{position} "
                      f"{dtype.name}": (kernel, dtype)
                      for position, function in enumerate(function_class.kernels(backend))
                      for kernel, dtype in held_kernels(function, kernel_type, per_dtype_type)})
    return found


def main() -> int:
    started = time.perf_counter()
    if numba.config.ENABLE_CUDASIM:
        print("cuda-compile: NUMBA_ENABLE_CUDASIM is set; run with NUMBA_ENABLE_CUDASIM=0 to compile for real GPUs")
        return 1
    from numba.cuda.dispatcher import CUDADispatcher

    import minitorch
    from minitorch import cuda_ops
    cuda_ops.require_cuda = lambda: None  # building the backend needs no GPU: nothing is launched here
    kernels = module_kernels(minitorch, CUDADispatcher)
    cuda_backend = minitorch.TensorBackend(minitorch.CudaOps)
    kernels.update(backend_kernels(cuda_backend, CUDADispatcher, cuda_ops.KernelPerDtype))
    kernels.update(factory_kernels(minitorch, cuda_backend, CUDADispatcher, cuda_ops.KernelPerDtype))
    devices = device_functions(kernels, CUDADispatcher)
    ptxas = ptxas_path()
    print(f"cuda-compile: {len(kernels)} kernel-dtype pairs (each kernel with every storage dtype; calling {len(devices)} device functions) x "
          f"{len(ARCHITECTURES)} architectures, numba-cuda {importlib.metadata.version('numba-cuda')}, "
          f"{'assembled with ' + ptxas if ptxas else 'PTX only (ptxas not found)'}", flush=True)
    failures = compile_all(kernels, devices, ptxas)
    elapsed = time.perf_counter() - started
    compiled = len(kernels) * len(ARCHITECTURES) - len(failures)
    print(f"cuda-compile: {compiled} of {len(kernels) * len(ARCHITECTURES)} compiled "
          f"({len(kernels)} kernel-dtype pairs, {', '.join(f'sm_{major}{minor}' for major, minor in ARCHITECTURES)}) "
          f"in {elapsed:.1f} s")
    for failure in failures:
        print(f"  failed: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
