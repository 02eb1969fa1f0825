"""Build the Cython extensions of kafkafmt (metadata lives in pyproject.toml)."""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join("kafkafmt", "_native")

# -O3 for the decode loops; the CRC code picks SSE4.2 at run time, so no -march is needed. -g0: no debug
# information (Python's own flags ask for it; it costs a fifth of the compile time and nothing at run time).
COMPILE_ARGS = [] if os.name == "nt" else ["-O3", "-fno-strict-aliasing", "-g0"]
if os.environ.get("KAFKAFMT_SANITIZE"):
    COMPILE_ARGS += ["-fsanitize=address", "-fno-omit-frame-pointer", "-O1", "-g"]

extensions = [
    Extension(
        f"kafkafmt._native.{name}",
        [os.path.join(NATIVE, f"{name}.pyx")],
        include_dirs=[os.path.join(HERE, NATIVE)],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=["-fsanitize=address"] if os.environ.get("KAFKAFMT_SANITIZE") else [],
        libraries=["dl"] if os.name != "nt" else [],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in ("scan", "kernel", "writer", "frames", "schema", "avro", "protobuf", "jsontext")
]

# the eight modules are translated and compiled on every core at once (the first install's wait is mostly
# the C compiler's; KAFKAFMT_BUILD_JOBS=N caps it)
JOBS = int(os.environ.get("KAFKAFMT_BUILD_JOBS") or os.cpu_count() or 1)

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3", "boundscheck": False, "wraparound": False},
        include_path=[HERE],
        nthreads=JOBS if JOBS > 1 else 0,
    ),
    options={"build_ext": {"parallel": JOBS}},
)
