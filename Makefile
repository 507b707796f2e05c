.PHONY: test bench fuzz
test:  ; ./scripts/test.sh
bench: ; ./scripts/bench.sh
fuzz:  ; ./scripts/fuzz.sh
