/* elfcheck.h — is a file a whole shared object for this machine, before
 * dlopen maps it?
 *
 * dlopen maps a shared object's segments where its program headers say they
 * are in the file.  A file cut short — a plugin half-copied by a package
 * upgrade or `make install` — still maps, but the first touch of a page
 * past the file's end kills the process with SIGBUS, with no message.  So
 * the loader reads the headers first and refuses such a file with the
 * reason:
 *
 *     truncated: segment 2 ends at byte 13496, file has 4096
 *
 * What is checked: a regular file (never opened in a way that blocks: a
 * FIFO is refused, not waited on); the ELF magic; this machine's class
 * (32/64-bit), byte order and architecture; type ET_DYN; and that the
 * program headers, every segment's file bytes, the section header table
 * and every section's file bytes lie inside the file.
 *
 * A file truncated after the check, between it and dlopen, can still
 * crash the process: install plugins by renaming a complete file into
 * place, as package managers do.
 */
#ifndef TSR_ELFCHECK_H
#define TSR_ELFCHECK_H

#include <tessera/common.h>

/* 0 when path looks loadable; else a negative errno and, in err, the reason
 * (without the path): -ENOENT etc. when it cannot be opened, -EINVAL when
 * it is not a regular file, -ENOEXEC when it is not a whole shared object
 * of this machine. */
TSR_API int tsr_elf_check_file(const char *path, char *err, size_t errlen);

#endif
