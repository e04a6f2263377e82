# Returns a very large value: a 16 MB string and a list of 2 million ints (16 MB once
# encoded), to exhaust the reporter's output cap or the scorer's memory while decoding.
def solve(a, b):
    return "3" * (16 << 20)


class Solution:
    def solve(self, a, b):
        return list(range(2_000_000))
