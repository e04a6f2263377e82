# Returns values that contain themselves: a list holding itself and a dict whose value is
# the dict; a naive encoder or comparison recurses forever or stops early.
def solve(a, b):
    loop = [0]
    loop.append(loop)
    return loop


class Solution:
    def solve(self, a, b):
        d = {}
        d["self"] = d
        return d
