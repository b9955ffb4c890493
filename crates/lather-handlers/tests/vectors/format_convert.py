"""Expected results for tests/format_convert.rs, computed independently of lather.

Applies the rules of examples/format-convert.map to each case with Python's
xml.etree.ElementTree (which works on expanded {namespace}local names, so prefixes play
no part) and prints the canonical form the Rust test compares against: elements as
<{ns}local {ns}attr="value"…>children</>, attributes sorted, text quoted, comments and
processing instructions dropped.

    python3 crates/lather-handlers/tests/vectors/format_convert.py
"""

import pathlib
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[4]
RULES = (ROOT / "examples" / "format-convert.map").read_text()

# (name, declarations in scope outside the Body content, Body content)
CASES = [
    ("prefixed", [],
     '<q:getQuote xmlns:q="urn:example:quotes:2009" xmlns:c="urn:example:common:1" id="7">'
     '<q:sym q:cur="EUR">LATH</q:sym><c:trace c:level="2">a &amp; b</c:trace></q:getQuote>'),
    ("default_namespace", [],
     '<getQuote xmlns="urn:example:quotes:2009"><sym>LATH</sym><when>today</when></getQuote>'),
    ("declared_outside", [("q", "urn:example:quotes:2009")],
     '<q:getQuote><q:items><q:item><q:sym><![CDATA[<L&H>]]></q:sym></q:item>'
     '<q:item><q:sym>GRND</q:sym></q:item></q:items></q:getQuote>'),
    ("new_declarations", [],
     '<q:getQuote xmlns:q="urn:example:quotes:2009"><legacyNote ref="r1">see <b>this</b>'
     '</legacyNote></q:getQuote>'),
    ("several_roots", [],
     '\n  <q:getQuote xmlns:q="urn:example:quotes:2009"/>\n  <!-- second -->\n'
     '  <c:ping xmlns:c="urn:example:common:1" ref="x"/>\n'),
]


def split(name):
    if name.startswith("{"):
        ns, local = name[1:].split("}", 1)
        return ns, local
    return "", name


def parse_rules(text, reverse):
    namespaces, elements, attributes = {}, {}, {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, old, eq, new = line.split()
        assert eq == "="
        if reverse:
            old, new = new, old
        if kind == "namespace":
            namespaces[old] = new
        elif kind == "element":
            elements[split(old)] = split(new)
        else:
            attributes[split(old)] = split(new)
    return namespaces, elements, attributes


def rename(element, rules):
    namespaces, elements, attributes = rules
    ns, local = split(element.tag)
    ns, local = elements.get((ns, local), (namespaces.get(ns, ns), local))
    element.tag = "{%s}%s" % (ns, local) if ns else local
    renamed = {}
    for key, value in element.attrib.items():
        ns, local = split(key)
        if (ns, local) in attributes:
            ns, local = attributes[(ns, local)]
        elif ns:
            ns = namespaces.get(ns, ns)
        renamed["{%s}%s" % (ns, local) if ns else local] = value
    element.attrib.clear()
    element.attrib.update(renamed)
    for child in element:
        rename(child, rules)


def quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def name(tag):
    ns, local = split(tag)
    return "{%s}%s" % (ns, local)


def dump_element(e):
    attrs = "".join(" %s=%s" % (name(k), quote(v)) for k, v in sorted((name(k), v) for k, v in e.attrib.items()))
    return "<%s%s>%s</>" % (name(e.tag), attrs, dump_content(e))


def dump_content(e):
    out = quote(e.text) if e.text else ""
    for child in e:
        out += dump_element(child)
        if child.tail:
            out += quote(child.tail)
    return out


def wrap(outside, content):
    decls = "".join(' xmlns:%s="%s"' % d for d in outside)
    return ET.fromstring("<wrapper%s>%s</wrapper>" % (decls, content))


forward, backward = parse_rules(RULES, False), parse_rules(RULES, True)
for case, outside, content in CASES:
    original = wrap(outside, content)
    before = dump_content(original)
    for child in original:
        rename(child, forward)
    after = dump_content(original)
    for child in original:
        rename(child, backward)
    assert dump_content(original) == before, case  # the table reverses cleanly
    print('    (\n        "%s",\n        r#"%s"#,\n        r#"%s"#,\n    ),' % (case, before, after))
