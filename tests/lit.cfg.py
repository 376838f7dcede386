# lit configuration for attnc: FileCheck tests of the dialect, the passes and
# the .attn front end. Run through CTest (`ctest -R lit`) or directly with
# `python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v build/tests`.
import os
import lit.formats

config.name = "attnc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".attn", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "fuzz", "reference"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnc_obj_root, "tests")

config.environment["PATH"] = os.pathsep.join(
    [config.attnc_tools_dir, config.llvm_tools_dir, "/usr/lib/llvm-19/bin",
     config.environment.get("PATH", os.environ.get("PATH", ""))])
# One compile cache for the whole suite, in the build tree: the tests share
# their kernels and leave the user's cache alone.
config.environment["ATTNC_CACHE_DIR"] = os.path.join(config.attnc_obj_root, "attnc-cache")
config.substitutions.append(("%examples", os.path.join(config.attnc_src_root, "examples")))

# CUDA's PTX assembler, where the toolkit is installed: the generated GPU
# kernels are assembled for a real architecture (no GPU needed).
ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# Distributed tuning (tune/Team.h): attnc built with MPI, and OpenMPI's
# launcher. Several ranks on this one machine (--oversubscribe), as root
# where the tests run as root; the ranks inherit the suite's environment.
import shutil
mpirun = shutil.which("mpirun")
if config.attnc_mpi.upper() in ("1", "ON", "TRUE", "YES") and mpirun:
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", mpirun + " --oversubscribe --allow-run-as-root"))
