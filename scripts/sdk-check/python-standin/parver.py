"""Stand-in for parver (see README.md): plain release versions, X.Y.Z."""
import re


class Version:
    def __init__(self, release):
        self.release = release
        self.pre_tag = self.pre = self.dev = self.local = None

    @classmethod
    def parse(cls, s):
        m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", s)
        if not m:
            raise ValueError(f"stand-in parver: unsupported version {s!r}")
        return cls(tuple(int(x) for x in m.groups()))
