"""Names of ELF header values, spelled as pyelftools and readelf's enums spell them.

An unknown value is named by its number, as pyelftools does.
"""

from __future__ import annotations

#: e_machine values of the architectures Linux runs on (and a few neighbours)
MACHINES = {
    0: "EM_NONE", 2: "EM_SPARC", 3: "EM_386", 4: "EM_68K", 8: "EM_MIPS", 10: "EM_MIPS_RS3_LE",
    15: "EM_PARISC", 18: "EM_SPARC32PLUS", 20: "EM_PPC", 21: "EM_PPC64", 22: "EM_S390",
    40: "EM_ARM", 41: "EM_ALPHA", 42: "EM_SH", 43: "EM_SPARCV9", 50: "EM_IA_64",
    62: "EM_X86_64", 76: "EM_CRIS", 87: "EM_V850", 88: "EM_M32R", 92: "EM_OPENRISC",
    94: "EM_XTENSA", 106: "EM_BLACKFIN", 113: "EM_ALTERA_NIOS2", 164: "EM_QDSP6",
    183: "EM_AARCH64", 188: "EM_TILEPRO", 189: "EM_MICROBLAZE", 191: "EM_TILEGX",
    195: "EM_ARC_COMPACT2", 243: "EM_RISCV", 247: "EM_BPF", 258: "EM_LOONGARCH",
}  # fmt: skip

OSABIS = {
    0: "ELFOSABI_SYSV", 1: "ELFOSABI_HPUX", 2: "ELFOSABI_NETBSD", 3: "ELFOSABI_LINUX",
    4: "ELFOSABI_HURD", 6: "ELFOSABI_SOLARIS", 7: "ELFOSABI_AIX", 8: "ELFOSABI_IRIX",
    9: "ELFOSABI_FREEBSD", 10: "ELFOSABI_TRU64", 11: "ELFOSABI_MODESTO", 12: "ELFOSABI_OPENBSD",
    13: "ELFOSABI_OPENVMS", 14: "ELFOSABI_NSK", 15: "ELFOSABI_AROS", 16: "ELFOSABI_FENIXOS",
    17: "ELFOSABI_CLOUD", 53: "ELFOSABI_SORTIX", 64: "ELFOSABI_ARM_AEABI", 97: "ELFOSABI_ARM",
    102: "ELFOSABI_CELL_LV2", 255: "ELFOSABI_STANDALONE",
}  # fmt: skip

TYPES = {
    0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE",
    0xFF00: "ET_LOPROC", 0xFFFF: "ET_HIPROC",
}  # fmt: skip


def machine_name(value: int) -> str:
    return MACHINES.get(value, str(value))


def osabi_name(value: int) -> str:
    return OSABIS.get(value, str(value))


def type_name(value: int) -> str:
    return TYPES.get(value, str(value))
