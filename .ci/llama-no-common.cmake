# Passed to llama-cpp-python's build by .ci/run (-DCMAKE_PROJECT_INCLUDE): runs after each
# project() call, so after llama-cpp-python forces LLAMA_BUILD_COMMON on and before llama.cpp
# reads the option.  The Python package loads only libllama and ggml; llama.cpp's common library
# (nlohmann/json, chat templates) was half of the build's time on 2 cores (294 s of 2 cores
# with it, 148 s without, side by side).
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp: build common utils library" FORCE)
