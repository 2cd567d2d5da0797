"""CPU feature flags of this machine, as /proc/cpuinfo lists them (for tests whose
tolerances were measured on one instruction set)."""


def cpu_has_flag(flag):
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return flag in line.split(":", 1)[1].split()
    return False
