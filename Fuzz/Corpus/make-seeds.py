#!/usr/bin/env python3
"""Writes the seed corpus's plistlib files (XML and binary) and old-style texts into seeds/.

The Foundation-written seeds come from make-foundation-seeds.swift; the files are committed, this script is
kept so that the corpus can be made again or grown. Run from this directory."""
import datetime, plistlib, os

domains = {
    "plistlib-defaults": {
        "RateLimit": 100, "Greeting": "Hello", "Verbose": True, "Quiet": False, "Ratio": 0.75,
        "Launched": datetime.datetime(2026, 11, 22, 14, 16, 4), "Token": b"\x00\x01\xfe\xff",
        "Hosts": ["a.example", "b.example"], "Limits": {"perMinute": 60, "burst": 10},
        "Empty": {}, "None": [], "Unicode": "Grüße, 世界 🎉", "Negative": -42,
        "Big": 2**63 - 1, "Small": -2**63, "Huge": 2**64 - 1,
    },
    "plistlib-nested": {"Features": {"beta": {"enabled": True, "users": ["x", "y"], "weights": [0.1, 1e300, -0.0]}},
                         "Matrix": [[1, 2], [3, [4, [5, {"deep": "yes"}]]]]},
    "plistlib-text": {"Markup": "<a href=\"x\">&amp;</a>", "Spaces": "  padded  ", "Lines": "one\ntwo\tthree",
                      "": "empty key", "Quote's": "\"quoted\""},
    "plistlib-dates": {"Epoch": datetime.datetime(1970, 1, 1), "Old": datetime.datetime(1, 1, 1),
                       "Late": datetime.datetime(9999, 12, 31, 23, 59, 59), "Leap": datetime.datetime(2024, 2, 29, 12)},
}
for name, value in domains.items():
    with open(f"seeds/{name}.xml.plist", "wb") as f:
        plistlib.dump(value, f, fmt=plistlib.FMT_XML)
    with open(f"seeds/{name}.binary.plist", "wb") as f:
        plistlib.dump(value, f, fmt=plistlib.FMT_BINARY)
# A binary file sharing one container (plistlib shares a Python object referenced twice).
shared = [1, 2, 3]
with open("seeds/plistlib-shared.binary.plist", "wb") as f:
    plistlib.dump({"a": shared, "b": shared, "c": [shared, shared]}, f, fmt=plistlib.FMT_BINARY)
# A top-level array, as some tools write.
with open("seeds/plistlib-array.binary.plist", "wb") as f:
    plistlib.dump(["x", 1, 2.5, True], f, fmt=plistlib.FMT_BINARY)

old_style = {
    "openstep-dict.txt": '{\n    RateLimit = 100;\n    Greeting = "Hello, world";\n    Hosts = ( a, b, "c d" );\n    Token = <0fa1 b2ff>;\n    Nested = { x = { y = ( ) ; }; };\n}\n',
    "openstep-comments.txt": '// a comment\n{ /* block */ a = "\\U00e9\\n\\t\\"\\\\\\101"; b = \'single\'; }\n',
    "openstep-array.txt": '( 1, 2.5, YES, "2024-01-31 09:05:00 +0000", <>, {} )',
    "openstep-string.txt": '"just a string with \\033 escapes"',
    "openstep-bare.txt": 'com.example.app/path:1.0-beta_$+',
}
for name, text in old_style.items():
    with open(f"seeds/{name}", "w") as f:
        f.write(text)

# XML written by hand: the forms other writers use (references, CDATA, comments, DOCTYPE subset, empty
# elements, hexadecimal integers, special reals, fractional dates, a byte-order mark).
xml_forms = {
    "xml-forms.xml": '\ufeff<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist [ <!ENTITY x "y"> ]>\n'
        '<!-- comment --><plist version="1.0"><dict>\n'
        '<key>ref</key><string>&lt;&#x41;&#66;&amp;&quot;&apos;&gt;</string>\n'
        '<key>cdata</key><string><![CDATA[<raw> & text]]></string>\n'
        '<key>hex</key><integer>0x7fffffffffffffff</integer>\n<key>neg</key><integer> -0x10 </integer>\n'
        '<key>nan</key><real>nan</real><key>inf</key><real>-infinity</real><key>e</key><real>1e-300</real>\n'
        '<key>frac</key><date>2026-11-22T14:16:04.123456789Z</date>\n'
        '<key>empty</key><string/><key>t</key><true></true><key>a</key><array/><key>d</key><dict/>\n'
        '<key>data</key><data>\nAAEC\n/w==\n</data>\n'
        '</dict></plist>\n',
    "xml-bare-value.xml": '<array><integer>1</integer><string>x</string></array>',
}
for name, text in xml_forms.items():
    with open(f"seeds/{name}", "w", encoding="utf-8") as f:
        f.write(text)

# `defaults write` words after the key, separated by NUL bytes (the fuzz target splits on NUL).
words = {
    "int": ["-int", "42"], "integer": ["-integer", "-9223372036854775808"], "float": ["-float", "2.5e-3"],
    "bool": ["-bool", "YES"], "boolean": ["-boolean", "false"], "string": ["-string", "hello world"],
    "data": ["-data", "<0fa1 b2>"], "date": ["-date", "2024-01-31 09:05:00 +0000"],
    "date-iso": ["-date", "2024-01-31T09:05:00Z"], "date-day": ["-date", "2024-01-31"],
    "array": ["-array", "a", "-int", "1", "(x, y)", "-bool", "no"],
    "array-add": ["-array-add", "-float", "1.5", "{ k = v; }"],
    "dict": ["-dict", "k", "v", "n", "-int", "3", "d", "-date", "2024-01-31"],
    "dict-add": ["-dict-add", "key", "<00ff>"],
    "bare-dict": ['{ Key = "value"; Nested = ( 1, 2 ); }'], "bare-array": ["(a, b, \"c d\")"],
    "bare-data": ["<deadbeef>"], "bare-string": ["plain"], "bare-xml": ["<plist><true/></plist>"],
}
for name, parts in words.items():
    with open(f"value-parser/{name}", "wb") as f:
        f.write(b"\0".join(p.encode() for p in parts))
