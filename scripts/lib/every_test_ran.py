"""Fails when a test that `swift test list` names did not run in any stage of scripts/test.

    python3 every_test_ran.py LIST REPORT.xml...

LIST is the output of `swift test list` ("Module.Suite/Nested/test(label:)" a line); each REPORT is the JUnit file a
stage's `swift test --xunit-output` wrote. A test counts as run when some report has it without <skipped/>. The
names that did not run are printed, one a line, and the exit status is 1.
"""
import sys
import xml.etree.ElementTree as ElementTree


def listed_tests(path):
    with open(path, encoding="utf-8") as listing:
        return {line.strip().replace("/", ".") for line in listing if line.strip()}


def tests_run(report_paths):
    ran = set()
    for path in report_paths:
        for case in ElementTree.parse(path).iter("testcase"):
            if case.find("skipped") is None:
                ran.add(f"{case.get('classname')}.{case.get('name')}")
    return ran


def main(arguments):
    if len(arguments) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    missing = sorted(listed_tests(arguments[0]) - tests_run(arguments[1:]))
    for name in missing:
        print(name)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
