# Where dtrain keeps what lives outside a clone (the LibTorch venv, ccache,
# a CUDA toolkit from NVIDIA's wheels): DTRAIN_HOME, else the XDG cache's
# dtrain folder, as scripts/common.sh has it. Installed with the package.

# Sets <out> to that folder.
function(dtrain_home out)
  if(DEFINED ENV{DTRAIN_HOME})
    set(home "$ENV{DTRAIN_HOME}")
  elseif(DEFINED ENV{XDG_CACHE_HOME})
    set(home "$ENV{XDG_CACHE_HOME}/dtrain")
  else()
    set(home "$ENV{HOME}/.cache/dtrain")
  endif()
  set(${out} "${home}" PARENT_SCOPE)
endfunction()
