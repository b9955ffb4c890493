"""Reads a callgrind dump (uncompressed names) and prints the instructions per request
and the functions with the most instructions of their own (callees excluded).

Usage: instructions.py DUMP REQUESTS TOP [CALLEE]

With CALLEE (a regular expression), prints instead the instructions per request spent in
calls to the functions it matches, callees included (the calls made from functions it
also matches are not counted twice).
"""

import collections
import re
import sys


def cost_lines(path):
    """Each cost line of the dump as (function, callee, instructions): callee is the
    function called for a line after a `calls=` line (the call's cost, callees included),
    None for the function's own instructions."""
    function = called = None
    after_call = False
    with open(path) as dump:
        for line in dump:
            if line.startswith("fn="):
                function = line[3:].rstrip("\n")
            elif line.startswith("cfn="):
                called = line[4:].rstrip("\n")
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                fields = line.split()
                if len(fields) >= 2:
                    yield function, called if after_call else None, int(fields[1])
                after_call = False


def own_instructions(path):
    """Each function's own instruction count (callees excluded)."""
    own = collections.Counter()
    for function, callee, count in cost_lines(path):
        if callee is None:
            own[function] += count
    return own


def inclusive_calls(path, pattern):
    """Instructions in calls to functions matching `pattern`, from functions not matching it."""
    return sum(
        count
        for function, callee, count in cost_lines(path)
        if callee is not None
        and pattern.search(callee)
        and not pattern.search(function or "")
    )


def main():
    path, requests, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if len(sys.argv) > 4:
        total = inclusive_calls(path, re.compile(sys.argv[4]))
        print(f"{total / requests:.0f} instructions per request in calls to {sys.argv[4]}")
        return
    own = own_instructions(path)
    total = sum(own.values())
    print(f"{total / requests:.0f} instructions per request ({total} over {requests})")
    for function, count in own.most_common(top):
        print(f"{count / requests:8.0f} {100 * count / total:5.1f}%  {function[:150]}")


main()
