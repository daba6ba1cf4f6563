-- Prints the built-in dataset's folder (creating it on first use), for scripts/bench.
print(require("lrhost").default_dataset())
