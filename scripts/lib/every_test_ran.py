"""Prints each test of LIST (`swift test list`: "Module.Suite/test()" a line) that no JUnit REPORT holds as run (a
testcase without <skipped/>), and exits 1 when there is any.

    python3 every_test_ran.py LIST REPORT.xml...
"""
import sys
import xml.etree.ElementTree as ElementTree

with open(sys.argv[1], encoding="utf-8") as listing:
    listed = {line.strip().replace("/", ".") for line in listing if line.strip()}
ran = {f"{case.get('classname')}.{case.get('name')}" for path in sys.argv[2:]
       for case in ElementTree.parse(path).iter("testcase") if case.find("skipped") is None}
missing = sorted(listed - ran)
for name in missing:
    print(name)
sys.exit(1 if missing else 0)
