printf 'old\n' > {ROOT}/i-existing-rewritten-then-fail/f
