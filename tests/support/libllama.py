"""llama.cpp's prebuilt CPU libraries from npm node-llama-cpp (.refs, scripts/install-refs.sh),
loaded with ctypes: the one place the test scripts that call libllama directly
(tests/parity/llama_quantize.py, tests/gguf/llama_cpp_eval.py) find them. Never downloads or
builds anything."""
import ctypes
import os

BINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".refs", "node_modules",
                    "@node-llama-cpp", "linux-x64", "bins", "linux-x64")


def load_libllama(bins=BINS):
    """libllama with libggml-base and libggml loaded first (RTLD_GLOBAL, so libllama and the CPU
    backends ggml_backend_load_all_from_path(bins) loads find their symbols). Its ggml_* symbols
    resolve through the returned handle too (libllama links libggml)."""
    for name in ["libggml-base.so", "libggml.v0.4.0.so"]:
        ctypes.CDLL(os.path.join(bins, name), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(os.path.join(bins, "libllama.v0.4.0.so"), mode=ctypes.RTLD_GLOBAL)
