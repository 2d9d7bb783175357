"""Declared dependencies that no installed package satisfies, computed from the parsed database.

This is the cheap first pass; the manager's own tool (apt-get check, rpm -Va) is asked only when
this finds something, to quote its verdict, because those tools cost up to a second each.
"""

from __future__ import annotations

from collections import defaultdict

from vkdoctor.model.record import record
from vkdoctor.packages.model import Package, PackageDB, Relation
from vkdoctor.packages.versions import satisfies

#: rpm requirements that are not package capabilities: files, rich booleans, rpm's own features
_RPM_SKIP = ("/", "(", "rpmlib(", "rtld(", "config(")


@record(frozen=True, kw_only=True)
class Unmet:
    package: Package
    #: the alternatives, none of which is satisfied
    relation: tuple[Relation, ...]

    def __str__(self) -> str:
        return f"{self.package.label} depends on {' | '.join(str(r) for r in self.relation)}"


def unmet(db: PackageDB) -> list[Unmet]:
    pkgs = db.packages()
    by_name: dict[str, list[Package]] = defaultdict(list)
    provided: dict[str, list[tuple[Package, Relation]]] = defaultdict(list)
    for p in pkgs:
        by_name[p.name].append(p)
        for prov in p.provides:
            provided[prov.name].append((p, prov))

    answers: dict[tuple[str, str, str], bool] = {}

    def meets(version: str, op: str, wanted: str) -> bool:
        # most packages need the same few (libc6 >= 2.34): each comparison is made once
        key = (version, op, wanted)
        if key not in answers:
            answers[key] = satisfies(db.family, version, op, wanted)
        return answers[key]

    def ok(rel: Relation) -> bool:
        if db.family == "rpm" and rel.name.startswith(_RPM_SKIP):
            return True
        for p in by_name.get(rel.name, ()):
            if not rel.versioned or meets(p.version, rel.op or "", rel.version or ""):
                return True
        for _, prov in provided.get(rel.name, ()):
            if not rel.versioned:
                return True
            if prov.version and meets(prov.version, rel.op or "", rel.version or ""):
                return True
        return False

    out: list[Unmet] = []
    for p in pkgs:
        for group in p.depends:
            if not any(ok(rel) for rel in group):
                out.append(Unmet(package=p, relation=group))
    return out
