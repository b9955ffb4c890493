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


def own_instructions(path):
    """Each function's own instruction count: cost lines not following a `calls=` line."""
    own = collections.Counter()
    function = None
    after_call = False
    with open(path) as dump:
        for line in dump:
            if line.startswith("fn="):
                function = line[3:].rstrip("\n")
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                fields = line.split()
                if len(fields) >= 2:
                    if not after_call:
                        own[function] += int(fields[1])
                    after_call = False
    return own


def inclusive_calls(path, callee):
    """Instructions in calls to functions matching `callee`, from functions not matching it."""
    total = 0
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
            elif after_call:
                after_call = False
                fields = line.split()
                if (
                    len(fields) >= 2
                    and callee.search(called or "")
                    and not callee.search(function or "")
                ):
                    total += int(fields[1])
    return total


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
