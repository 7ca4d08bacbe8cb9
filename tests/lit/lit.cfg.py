# lit configuration for kiln: tests are .mlir and .test files under tests/lit.
import os
import sys
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.kiln_bin_dir), "tests", "lit")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]

# kiln's tools first, then LLVM's FileCheck/not/count.
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%python", sys.executable))
# The Python with torch and onnx (KILN_TORCH_PYTHON) that tests/onnx/export_llama.py needs:
# tests exporting a model at test time say `REQUIRES: torch-export`.
torch_python = getattr(config, "kiln_torch_python", "")
config.substitutions.append(("%torch_python", torch_python or "false"))
if torch_python and os.access(torch_python, os.X_OK):
    config.available_features.add("torch-export")
