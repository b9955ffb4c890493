"""Reads a callgrind dump (uncompressed names) and prints the instructions per request
and the functions with the most instructions of their own (callees excluded).

Usage: instructions.py DUMP REQUESTS TOP
"""

import collections
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


def main():
    path, requests, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    own = own_instructions(path)
    total = sum(own.values())
    print(f"{total / requests:.0f} instructions per request ({total} over {requests})")
    for function, count in own.most_common(top):
        print(f"{count / requests:8.0f} {100 * count / total:5.1f}%  {function[:150]}")


main()
