# Floods stdout, and returns a value far larger than any answer.
import sys

sys.stdout.write("3\n" * (16 << 20))


def solve(a, b):
    return [3] * (1 << 24)


class Solution:
    def solve(self, a, b):
        return solve(a, b)
