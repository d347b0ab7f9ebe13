"""JUnit XML from a report document, for CI test reports: a testsuite per
challenge, a testcase per solution and test."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any


def junit_xml(document: dict[str, Any]) -> str:
    root = ET.Element("testsuites", name="harness")
    by_challenge: dict[str, list[dict[str, Any]]] = {}
    for record in document["results"]:
        by_challenge.setdefault(record["challenge"], []).append(record)
    for challenge, records in sorted(by_challenge.items()):
        suite = ET.SubElement(root, "testsuite", name=challenge)
        cases = failures = 0
        total_time = 0.0
        for record in records:
            gpu = f"[gpu{record['gpu']}]" if record.get("gpu") not in (None, 0) else ""
            classname = f"{challenge}.{record['solution']}{gpu}"
            tests = record["tests"] or [None]  # a build failure has no tests: report the build
            for test in tests:
                name = test["name"] if test else "build"
                case = ET.SubElement(suite, "testcase", classname=classname, name=name)
                seconds = test["duration_s"] if test else 0.0
                case.set("time", f"{seconds:.6f}")
                total_time += seconds
                cases += 1
                passed = test["passed"] if test else record["passed"]
                reason = (test["reason"] if test else record["reason"]) or "failed"
                message = test["message"] if test else record["message"]
                if not passed:
                    failures += 1
                    failure = ET.SubElement(case, "failure", type=reason, message=f"{reason}: {message.splitlines()[0] if message else ''}")
                    failure.text = message
                if test and test["kind"] == "performance" and record.get("timing"):
                    summary = record["timing"].get("summary_gpu_time_s")
                    if summary:
                        ET.SubElement(case, "system-out").text = (
                            f"median {summary['median'] * 1e6:.2f} us over {summary['count']} calls, cv {summary['cv'] * 100:.2f}%"
                        )
        suite.set("tests", str(cases))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("time", f"{total_time:.6f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
