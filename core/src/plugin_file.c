/* The ELF checks on a plugin file, before and after dlopen. */
#define _GNU_SOURCE /* dladdr1, dlinfo */
#include "plugin_file.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif
#define HOST_CLASS (__ELF_NATIVE_CLASS == 64 ? ELFCLASS64 : ELFCLASS32)

/* The machine libtabq itself was built for, from its own ELF header as the dynamic loader mapped
 * it. EM_NONE when that cannot be read; dlopen then remains the only check of the machine. */
static unsigned host_machine(void) {
  Dl_info self;
  if (!dladdr((void *)&tabq__plugin_file_check, &self) || !self.dli_fbase)
    return EM_NONE;
  const ElfW(Ehdr) *h = self.dli_fbase;
  return memcmp(h->e_ident, ELFMAG, SELFMAG) ? EM_NONE : h->e_machine;
}

static int refuse(tabq_error *err, const char *path, const char *what) {
  return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, "plugin %s %s", path, what);
}

static int truncated(tabq_error *err, const char *path, uint64_t size, const char *part,
                     uint64_t end) {
  return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                       "plugin %s is truncated: it has %llu bytes, but its %s ends at byte %llu; "
                       "install the whole file again",
                       path, (unsigned long long)size, part, (unsigned long long)end);
}

/* The header as read from the file, checked against this process. */
static int check_header(const char *path, const ElfW(Ehdr) * h, tabq_error *err) {
  if (h->e_ident[EI_CLASS] != HOST_CLASS)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s is a %d-bit ELF object; this process is %d-bit", path,
                         h->e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32, __ELF_NATIVE_CLASS);
  if (h->e_ident[EI_DATA] != HOST_DATA)
    return refuse(err, path, "is an ELF object of the other byte order than this process");
  if (h->e_type != ET_DYN)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s is an ELF object of type %u, not a shared object (ET_DYN)",
                         path, (unsigned)h->e_type);
  unsigned machine = host_machine();
  if (machine != EM_NONE && h->e_machine != machine)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s is built for ELF machine %u; this process runs on machine %u",
                         path, (unsigned)h->e_machine, machine);
  if (h->e_phnum && h->e_phentsize != sizeof(ElfW(Phdr)))
    return refuse(err, path, "has program headers of a size this process does not read");
  return TABQ_OK;
}

/* Every part the dynamic loader reads or maps lies inside the file. */
static int check_extent(const char *path, int fd, const ElfW(Ehdr) * h, uint64_t size,
                        tabq_error *err) {
  uint64_t end = (uint64_t)h->e_phoff + (uint64_t)h->e_phnum * h->e_phentsize;
  if (h->e_phoff > size || end > size)
    return truncated(err, path, size, "program header table", end);
  for (unsigned i = 0; i < h->e_phnum; i++) {
    ElfW(Phdr) ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(h->e_phoff + (uint64_t)i * sizeof ph)) !=
        (ssize_t)sizeof ph)
      return truncated(err, path, size, "program header table", end);
    if (ph.p_type != PT_LOAD)
      continue;
    uint64_t seg_end = (uint64_t)ph.p_offset + ph.p_filesz;
    if (ph.p_offset > size || seg_end > size)
      return truncated(err, path, size, "loadable segment", seg_end);
  }
  /* With more than 0xff00 sections e_shnum is 0 and the table still has its first entry. */
  uint64_t count = h->e_shnum ? h->e_shnum : (h->e_shoff ? 1 : 0);
  end = (uint64_t)h->e_shoff + count * h->e_shentsize;
  if (h->e_shoff > size || end > size)
    return truncated(err, path, size, "section header table", end);
  return TABQ_OK;
}

int tabq__plugin_file_check(const char *path, tabq_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not hang the connect */
  if (fd < 0)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL, "cannot open plugin %s: %s", path,
                         strerror(errno));
  struct stat st;
  ElfW(Ehdr) h;
  ssize_t n = -1;
  int rc = TABQ_OK;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode))
    rc = refuse(err, path, "is not a regular file");
  else if ((n = pread(fd, &h, sizeof h, 0)) < SELFMAG || memcmp(h.e_ident, ELFMAG, SELFMAG))
    rc = refuse(err, path, "is not an ELF shared object (it does not begin with the ELF magic)");
  else if (n < (ssize_t)sizeof h)
    rc = truncated(err, path, (uint64_t)st.st_size, "ELF header", sizeof h);
  else if (!(rc = check_header(path, &h, err)))
    rc = check_extent(path, fd, &h, (uint64_t)st.st_size, err);
  close(fd);
  return rc;
}

int tabq__plugin_entry_check(const char *path, void *handle, void *sym, tabq_error *err) {
  Dl_info info;
  const ElfW(Sym) *es = NULL;
  if (!dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) || !es)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s: its '%s' lies in no symbol the dynamic loader knows", path,
                         TABQ_PLUGIN_ENTRY_SYMBOL);
  unsigned type = ELF64_ST_TYPE(es->st_info); /* the same bits in both classes */
  if (type != STT_FUNC && type != STT_GNU_IFUNC)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s: its '%s' is a data object (ELF symbol type %u), not a "
                         "function; the entry must be a function",
                         path, TABQ_PLUGIN_ENTRY_SYMBOL, type);
  /* dlsym also searches the plugin's dependencies: the entry must be the plugin's own. */
  struct link_map *mine = NULL, *owner = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &mine) ||
      !dladdr1(sym, &info, (void **)&owner, RTLD_DL_LINKMAP) || owner != mine)
    return tabq__err_set(err, TABQ_PLUGIN, NULL, NULL,
                         "plugin %s: its '%s' comes from another library (%s)", path,
                         TABQ_PLUGIN_ENTRY_SYMBOL, info.dli_fname ? info.dli_fname : "unknown");
  return TABQ_OK;
}
