/* elfcheck.c — checking a shared object's headers against its size before
 * dlopen (elfcheck.h). */
#include "plugin/elfcheck.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What this process can load: its own class, byte order and machine. */
#if __SIZEOF_POINTER__ == 8
#define HOST_CLASS ELFCLASS64
#else
#define HOST_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#elif defined(__s390x__)
#define HOST_MACHINE EM_S390
#endif
/* (elsewhere the machine is left to dlopen, which checks it too) */

static const char *
file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : "not a regular file";
}

static const char *
elf_type_name(unsigned t)
{
	switch (t) {
	case ET_REL: return "an object file (.o), not linked as a shared object";
	case ET_EXEC: return "an executable";
	case ET_CORE: return "a core dump";
	}
	return "of an unknown ELF type";
}

/* Read exactly len bytes at off; a short read means the file shrank under
 * us, which is a refusal like any other truncation. */
static int
read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done,
				  off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

/* Does [off, off + len) lie inside a file of size bytes?  Overflow-safe:
 * off and len come from the file. */
static bool
inside(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* The end of [off, off + len) for a message, or UINT64_MAX on overflow. */
static uint64_t
end_of(uint64_t off, uint64_t len)
{
	return len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

static int
check_segments(int fd, const ElfW(Ehdr) *eh, uint64_t size, char *err,
	       size_t errlen)
{
	uint64_t bytes = (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr));
	ElfW(Phdr) *ph;
	int rc = 0;

	if (eh->e_phnum == 0)
		return tsr_errf(err, errlen, -ENOEXEC,
				"no program headers: nothing to load");
	if (eh->e_phentsize != sizeof(ElfW(Phdr)))
		return tsr_errf(err, errlen, -ENOEXEC,
				"program header entries of %u bytes, expected %zu",
				eh->e_phentsize, sizeof(ElfW(Phdr)));
	if (!inside(eh->e_phoff, bytes, size))
		return tsr_errf(err, errlen, -ENOEXEC,
				"truncated: program headers end at byte %" PRIu64
				", file has %" PRIu64,
				end_of(eh->e_phoff, bytes), size);
	ph = malloc(bytes); /* at most 65535 entries, and inside the file */
	if (ph == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	if (read_at(fd, ph, bytes, (off_t)eh->e_phoff) < 0) {
		free(ph);
		return tsr_errf(err, errlen, -ENOEXEC,
				"cannot read its program headers (did it change while being read?)");
	}
	for (unsigned i = 0; i < eh->e_phnum && rc == 0; i++) {
		if (ph[i].p_filesz == 0)
			continue;
		if (!inside(ph[i].p_offset, ph[i].p_filesz, size))
			rc = tsr_errf(err, errlen, -ENOEXEC,
				      "truncated: segment %u ends at byte %" PRIu64
				      ", file has %" PRIu64, i,
				      end_of(ph[i].p_offset, ph[i].p_filesz), size);
		else if (ph[i].p_type == PT_LOAD && ph[i].p_filesz > ph[i].p_memsz)
			rc = tsr_errf(err, errlen, -ENOEXEC,
				      "segment %u is malformed: %" PRIu64
				      " bytes in the file, more than its %" PRIu64
				      " bytes in memory", i, (uint64_t)ph[i].p_filesz,
				      (uint64_t)ph[i].p_memsz);
	}
	free(ph);
	return rc;
}

/* dlopen reads no section headers, but a file whose segments are whole
 * and whose tail is gone is still a half-copied file: the section header
 * table and the sections outside the segments (symbols, debug data) sit at
 * its end. */
static int
check_sections(int fd, const ElfW(Ehdr) *eh, uint64_t size, char *err,
	       size_t errlen)
{
	/* e_shnum 0 with a table: the count is in entry 0 (SHN_LORESERVE or
	 * more sections); check that entry's bounds only */
	unsigned n = eh->e_shnum ? eh->e_shnum : eh->e_shoff ? 1 : 0;
	uint64_t bytes = (uint64_t)n * sizeof(ElfW(Shdr));
	ElfW(Shdr) *sh;
	int rc = 0;

	if (n == 0)
		return 0;
	if (eh->e_shentsize != sizeof(ElfW(Shdr)))
		return tsr_errf(err, errlen, -ENOEXEC,
				"section header entries of %u bytes, expected %zu",
				eh->e_shentsize, sizeof(ElfW(Shdr)));
	if (!inside(eh->e_shoff, bytes, size))
		return tsr_errf(err, errlen, -ENOEXEC,
				"truncated: the section header table ends at byte %"
				PRIu64 ", file has %" PRIu64,
				end_of(eh->e_shoff, bytes), size);
	if (eh->e_shnum == 0)
		return 0;
	sh = malloc(bytes);
	if (sh == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	if (read_at(fd, sh, bytes, (off_t)eh->e_shoff) < 0) {
		free(sh);
		return tsr_errf(err, errlen, -ENOEXEC,
				"cannot read its section headers (did it change while being read?)");
	}
	for (unsigned i = 1; i < n && rc == 0; i++)
		if (sh[i].sh_type != SHT_NOBITS &&
		    !inside(sh[i].sh_offset, sh[i].sh_size, size))
			rc = tsr_errf(err, errlen, -ENOEXEC,
				      "truncated: section %u ends at byte %" PRIu64
				      ", file has %" PRIu64, i,
				      end_of(sh[i].sh_offset, sh[i].sh_size), size);
	free(sh);
	return rc;
}

static int
check_fd(int fd, char *err, size_t errlen)
{
	ElfW(Ehdr) eh;
	struct stat st;
	uint64_t size;
	int rc;

	if (fstat(fd, &st) < 0)
		return tsr_errf(err, errlen, -errno, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return tsr_errf(err, errlen, -EINVAL,
				"%s, not a shared object file", file_kind(st.st_mode));
	size = (uint64_t)st.st_size;
	memset(&eh, 0, sizeof(eh));
	if (read_at(fd, &eh, size < sizeof(eh) ? (size_t)size : sizeof(eh), 0) < 0)
		return tsr_errf(err, errlen, -ENOEXEC,
				"cannot read its ELF header (did it change while being read?)");
	if (size < SELFMAG || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return tsr_errf(err, errlen, -ENOEXEC,
				"not an ELF file (%" PRIu64 " bytes, without the ELF magic number)",
				size);
	if (size < sizeof(eh))
		return tsr_errf(err, errlen, -ENOEXEC,
				"truncated: the ELF header needs %zu bytes, file has %" PRIu64,
				sizeof(eh), size);
	if (eh.e_ident[EI_CLASS] != HOST_CLASS)
		return tsr_errf(err, errlen, -ENOEXEC,
				"built for %s machines, this one is %d-bit",
				eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit"
				: eh.e_ident[EI_CLASS] == ELFCLASS64 ? "64-bit"
				: "unknown (ELF class not 32 or 64-bit)",
				HOST_CLASS == ELFCLASS64 ? 64 : 32);
	if (eh.e_ident[EI_DATA] != HOST_DATA)
		return tsr_errf(err, errlen, -ENOEXEC,
				"built for %s machines, this one is %s",
				eh.e_ident[EI_DATA] == ELFDATA2MSB ? "big-endian"
				: eh.e_ident[EI_DATA] == ELFDATA2LSB ? "little-endian"
				: "unknown-endian",
				HOST_DATA == ELFDATA2LSB ? "little-endian" : "big-endian");
	if (eh.e_type != ET_DYN)
		return tsr_errf(err, errlen, -ENOEXEC,
				"not a shared object: it is %s", elf_type_name(eh.e_type));
#ifdef HOST_MACHINE
	if (eh.e_machine != HOST_MACHINE)
		return tsr_errf(err, errlen, -ENOEXEC,
				"built for another architecture (ELF machine %u, this one is %u)",
				eh.e_machine, (unsigned)HOST_MACHINE);
#endif
	if ((rc = check_segments(fd, &eh, size, err, errlen)) < 0)
		return rc;
	return check_sections(fd, &eh, size, err, errlen);
}

int
tsr_elf_check_file(const char *path, char *err, size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int rc;

	if (fd < 0)
		return tsr_errf(err, errlen, -errno, "%s", strerror(errno));
	rc = check_fd(fd, err, errlen);
	close(fd);
	return rc;
}
