"""Pass/fail counting for the script-style tests: each check prints what failed, and the
summary line "N passed, N failed" ends the run (CTest reads the exit code)."""


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}", flush=True)

    def summary(self):
        """Prints the summary line; returns the exit code."""
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 1 if self.failed else 0
