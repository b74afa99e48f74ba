# CI's llama-cpp-python build (.ci/run passes it with -DCMAKE_PROJECT_INCLUDE; it runs after each
# project() call).  Two changes that make the build shorter and leave what the tests see alike:
# - llama.cpp's common library is left out (llama-no-common.cmake, which users may pass too);
# - libllama, the model's loading, graph building and sampling, is compiled at -O1 instead of -O3.
#   ggml, where the model's arithmetic runs, keeps -O3.  The build takes about a quarter less
#   time; a reply under the grammar (llm:local choosing) about a tenth more, a free reply the
#   same (docs/speed-history.md has the figures).  For CI only: a user's build (docs/llm.md)
#   keeps the faster sampling.
include("${CMAKE_CURRENT_LIST_DIR}/llama-no-common.cmake")
get_property(_guild_deferred GLOBAL PROPERTY GUILD_LLAMA_DEFERRED)
if(NOT _guild_deferred AND PROJECT_NAME STREQUAL "llama.cpp")
  set_property(GLOBAL PROPERTY GUILD_LLAMA_DEFERRED TRUE)
  # the target is made later, in a subdirectory: set its options when llama.cpp's folder is done
  function(_guild_llama_at_o1)
    if(TARGET llama)
      target_compile_options(llama PRIVATE -O1)
    endif()
  endfunction()
  cmake_language(DEFER CALL _guild_llama_at_o1)
endif()
