printf 'i am a file' > {ROOT}/f-parent-is-file/afile
