printf 'old\n' > {ROOT}/f-fail-mode-existing/e
