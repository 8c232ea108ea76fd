printf 'old\n' > {ROOT}/f-fail-existing-restored/e; chmod 0640 {ROOT}/f-fail-existing-restored/e; printf 'older\n' > {ROOT}/f-fail-existing-restored/e.bak
