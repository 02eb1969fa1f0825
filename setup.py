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

# the Avro kernel is an interpreter of plan nodes: its small helpers (varints, appends to a column, the
# inline leaves) are worth inlining into its loops past gcc's default limits (a fifth fewer instructions
# per value: the calls' register saves and restores were a third of the work)
INLINE_ARGS = {"avro": ["--param", "max-inline-insns-single=2000", "--param", "inline-unit-growth=400",
                        "--param", "large-function-growth=400"]} if os.name != "nt" else {}

extensions = [
    Extension(
        f"kafkafmt._native.{name}",
        [os.path.join(NATIVE, f"{name}.pyx")],
        include_dirs=[os.path.join(HERE, NATIVE)],
        extra_compile_args=COMPILE_ARGS + INLINE_ARGS.get(name, []),
        extra_link_args=["-fsanitize=address"] if os.environ.get("KAFKAFMT_SANITIZE") else [],
        libraries=["dl"] if os.name != "nt" else [],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in ("scan", "kernel", "writer", "frames", "schema", "remotelog", "arrowcols", "framing", "avro",
                 "avrotext", "protobuf", "jsontext", "indexcheck", "plain", "listing", "reads",
                 "segrows", "arraymem")
]

# the modules are translated and compiled on every core at once (the first install's wait is mostly
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
