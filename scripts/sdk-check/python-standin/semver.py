"""Stand-in for semver (see README.md)."""


class VersionInfo:
    def __init__(self, major, minor=0, patch=0, prerelease=None, build=None):
        self.major, self.minor, self.patch, self.prerelease = major, minor, patch, prerelease

    def __str__(self):
        s = f"{self.major}.{self.minor}.{self.patch}"
        return s + (f"-{self.prerelease}" if self.prerelease else "")
