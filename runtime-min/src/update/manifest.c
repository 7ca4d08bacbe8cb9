/* A set of artifacts under one manifest, updated atomically: see kiln/update.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "kiln/update.h"

#include "kiln/module.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../platform/error.h"
#include "kiln/artifact.h"

#define PATH_CAP 1024

static kiln_status_t join(const char *dir, const char *name, char *out,
                          kiln_error_t *err) {
  int n = snprintf(out, PATH_CAP, "%s/%s", dir, name);
  if (n < 0 || n >= PATH_CAP)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "path too long: %s/%s", dir, name);
  return KILN_STATUS_OK;
}

static int valid_role(const char *r) {
  size_t n = strlen(r);
  if (n == 0 || n > 63)
    return 0;
  for (const char *p = r; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '-' || *p == '_' || *p == ':' || *p == '.'))
      return 0;
  return 1;
}

/* The size and preamble header checksum of an artifact file. */
static kiln_status_t identify(const char *path, uint64_t *size, uint64_t *hash,
                              kiln_error_t *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "%s: %s", path, strerror(errno));
  struct stat st;
  kiln_artifact_preamble_t p;
  ssize_t got = pread(fd, &p, sizeof p, 0);
  int ok = fstat(fd, &st) == 0;
  close(fd);
  if (!ok || got != (ssize_t)sizeof p || memcmp(p.magic, KILN_ARTIFACT_MAGIC, 8) != 0)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "%s: not a kiln artifact", path);
  *size = (uint64_t)st.st_size;
  *hash = p.header_xxh64;
  return KILN_STATUS_OK;
}

static kiln_status_t parse(const char *path, kiln_manifest_t *m, kiln_error_t *err) {
  memset(m, 0, sizeof *m);
  FILE *f = fopen(path, "r");
  if (!f)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", path, strerror(errno));
  char line[512];
  unsigned version = 0;
  int n_line = 0, bad = 0, have_gen = 0;
  while (!bad && fgets(line, sizeof line, f)) {
    ++n_line;
    if (!strchr(line, '\n')) {
      bad = 1;
      break;
    }
    if (n_line == 1) {
      bad = sscanf(line, "kiln-manifest %u", &version) != 1 || version != 1;
    } else if (n_line == 2) {
      bad = sscanf(line, "generation %" SCNu64, &m->generation) != 1;
      have_gen = !bad;
    } else {
      if (m->n_entries == KILN_MANIFEST_MAX_ENTRIES) {
        bad = 1;
        break;
      }
      kiln_manifest_entry_t *e = &m->entries[m->n_entries];
      char role[KILN_MANIFEST_NAME_MAX], file[KILN_MANIFEST_NAME_MAX];
      if (sscanf(line, "%127s %127s %" SCNu64 " %16" SCNx64, role, file, &e->size,
                 &e->header_xxh64) != 4 || !valid_role(role) || strchr(file, '/')) {
        bad = 1;
        break;
      }
      strcpy(e->role, role);
      strcpy(e->file, file);
      ++m->n_entries;
    }
  }
  fclose(f);
  if (bad || !have_gen)
    return kiln_error_set(err, KILN_STATUS_CORRUPT, "%s: malformed at line %d", path,
                          n_line ? n_line : 1);
  return KILN_STATUS_OK;
}

static kiln_status_t check_members(const char *dir, const kiln_manifest_t *m,
                                   kiln_error_t *err) {
  for (uint32_t i = 0; i < m->n_entries; ++i) {
    char path[PATH_CAP];
    uint64_t size, hash;
    KILN_RETURN_IF_ERROR(join(dir, m->entries[i].file, path, err));
    KILN_RETURN_IF_ERROR(identify(path, &size, &hash, err));
    if (size != m->entries[i].size || hash != m->entries[i].header_xxh64)
      return kiln_error_set(err, KILN_STATUS_CORRUPT,
                            "%s (%s): %" PRIu64 " bytes, header %016" PRIx64
                            "; the manifest says %" PRIu64 ", %016" PRIx64,
                            path, m->entries[i].role, size, hash, m->entries[i].size,
                            m->entries[i].header_xxh64);
  }
  return KILN_STATUS_OK;
}

kiln_status_t kiln_manifest_load(const char *dir, kiln_manifest_t *out, kiln_error_t *err) {
  kiln_error_clear(err);
  if (!dir || !out)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL dir or manifest");
  char path[PATH_CAP];
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE, path, err));
  KILN_RETURN_IF_ERROR(parse(path, out, err));
  return check_members(dir, out, err);
}

kiln_status_t kiln_manifest_path(const char *dir, const kiln_manifest_t *m, const char *role,
                                 char *out, size_t cap, kiln_error_t *err) {
  kiln_error_clear(err);
  for (uint32_t i = 0; m && role && i < m->n_entries; ++i)
    if (!strcmp(m->entries[i].role, role)) {
      int n = snprintf(out, cap, "%s/%s", dir, m->entries[i].file);
      if (n < 0 || (size_t)n >= cap)
        return kiln_error_set(err, KILN_STATUS_BUFFER_TOO_SMALL, "the path needs %d bytes",
                              n + 1);
      return KILN_STATUS_OK;
    }
  return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "the set has no member '%s'",
                        role ? role : "(null)");
}

static kiln_status_t sync_fd_close(int fd, const char *path, kiln_error_t *err) {
  int rc = fsync(fd);
  int e = errno;
  close(fd);
  if (rc != 0)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "fsync %s: %s", path, strerror(e));
  return KILN_STATUS_OK;
}

static kiln_status_t sync_dir(const char *dir, kiln_error_t *err) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", dir, strerror(errno));
  return sync_fd_close(fd, dir, err);
}

/* src copied to dst (created, synced): the new member, before anything names it. */
static kiln_status_t copy_file(const char *src, const char *dst, kiln_error_t *err) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", src, strerror(errno));
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    close(in);
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", dst, strerror(errno));
  }
  static char buf[1 << 16];
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n == 0)
      break;
    if (n < 0 && errno == EINTR)
      continue;
    for (ssize_t off = 0; n > 0 && off < n;) {
      ssize_t w = write(out, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        n = -1;
        break;
      }
      off += w;
    }
    if (n < 0) {
      int e = errno;
      close(in);
      close(out);
      return kiln_error_set(err, KILN_STATUS_IO_ERROR, "copying %s to %s: %s", src, dst,
                            strerror(e));
    }
  }
  close(in);
  return sync_fd_close(out, dst, err);
}

static kiln_status_t write_manifest(const char *path, const kiln_manifest_t *m,
                                    kiln_error_t *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", path, strerror(errno));
  char text[KILN_MANIFEST_MAX_ENTRIES * 300 + 64];
  int n = snprintf(text, sizeof text, "kiln-manifest 1\ngeneration %" PRIu64 "\n",
                   m->generation);
  for (uint32_t i = 0; i < m->n_entries; ++i)
    n += snprintf(text + n, sizeof text - (size_t)n, "%s %s %" PRIu64 " %016" PRIx64 "\n",
                  m->entries[i].role, m->entries[i].file, m->entries[i].size,
                  m->entries[i].header_xxh64);
  if (write(fd, text, (size_t)n) != n) {
    int e = errno;
    close(fd);
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", path, strerror(e));
  }
  return sync_fd_close(fd, path, err);
}

static int named_by(const kiln_manifest_t *m, const char *file) {
  for (uint32_t i = 0; i < m->n_entries; ++i)
    if (!strcmp(m->entries[i].file, file))
      return 1;
  return 0;
}

/* Removes members neither set names, and leftovers of interrupted installs. */
static void collect(const char *dir, const kiln_manifest_t *cur, const kiln_manifest_t *prev) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    const size_t n = strlen(e->d_name);
    const int member = n > 5 && !strcmp(e->d_name + n - 5, ".kiln");
    const int tmp = n > 4 && !strcmp(e->d_name + n - 4, ".tmp");
    if ((member && !named_by(cur, e->d_name) && !(prev && named_by(prev, e->d_name))) || tmp) {
      char path[PATH_CAP];
      if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
        unlink(path);
    }
  }
  closedir(d);
}

/* Commits `next` as the current manifest, keeping the current one as the previous. */
static kiln_status_t commit(const char *dir, const kiln_manifest_t *next, int have_current,
                            kiln_error_t *err) {
  char cur[PATH_CAP], prev[PATH_CAP], tmp[PATH_CAP], prev_tmp[PATH_CAP];
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE, cur, err));
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE ".prev", prev, err));
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE ".tmp", tmp, err));
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE ".prev.tmp", prev_tmp, err));
  KILN_RETURN_IF_ERROR(write_manifest(tmp, next, err));
  if (have_current) { /* the current manifest becomes the previous one, by a link */
    unlink(prev_tmp);
    if (link(cur, prev_tmp) != 0 || rename(prev_tmp, prev) != 0)
      return kiln_error_set(err, KILN_STATUS_IO_ERROR, "keeping %s: %s", prev, strerror(errno));
  }
  if (rename(tmp, cur) != 0) /* the commit point */
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", cur, strerror(errno));
  return sync_dir(dir, err);
}

/* A model artifact, or a module (kiln/module.h) that fits the set's base when the set
 * has one (a module installed as "base" is refused). */
static kiln_status_t verify_staged(const char *dir, const kiln_manifest_t *cur,
                                   const char *role, const char *staged,
                                   const uint8_t *public_key, kiln_error_t *err) {
  kiln_module_t *m = NULL;
  kiln_status_t st = kiln_module_open(staged, public_key, NULL, &m, err);
  kiln_artifact_options_t o = kiln_artifact_options_default();
  o.public_key = public_key;
  kiln_artifact_t *a = NULL;
  if (st == KILN_STATUS_INVALID_ARGUMENT) { /* a model artifact, not a module */
    KILN_RETURN_IF_ERROR(kiln_artifact_open_with(staged, &o, &a, err));
    kiln_artifact_close(a);
    return KILN_STATUS_OK;
  }
  KILN_RETURN_IF_ERROR(st);
  char base[PATH_CAP];
  kiln_error_t none;
  if (!strcmp(role, "base"))
    st = kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                        "%s is a module: the set's base must be a model artifact", staged);
  else if (kiln_manifest_path(dir, cur, "base", base, sizeof base, &none) == KILN_STATUS_OK &&
           (st = kiln_artifact_open_with(base, &o, &a, err)) == KILN_STATUS_OK)
    st = kiln_module_check(m, a, err);
  kiln_artifact_close(a);
  kiln_module_close(m);
  return st;
}

kiln_status_t kiln_manifest_install(const char *dir, const char *role, const char *staged,
                                    const uint8_t *public_key, kiln_error_t *err) {
  kiln_error_clear(err);
  if (!dir || !role || !staged)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL dir, role or file");
  if (!valid_role(role))
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT,
                          "role '%.64s': use 1-63 letters, digits, '-', '_', ':' or '.'", role);
  kiln_manifest_entry_t e;
  memset(&e, 0, sizeof e);
  KILN_RETURN_IF_ERROR(identify(staged, &e.size, &e.header_xxh64, err));
  strcpy(e.role, role);
  snprintf(e.file, sizeof e.file, "%s-%016" PRIx64 ".kiln", role, e.header_xxh64);
  for (char *p = e.file; *p; ++p)
    if (*p == ':')
      *p = '_';

  kiln_manifest_t cur, next;
  char path[PATH_CAP];
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE, path, err));
  struct stat st;
  const int have_current = stat(path, &st) == 0;
  if (have_current)
    KILN_RETURN_IF_ERROR(parse(path, &cur, err));
  else
    memset(&cur, 0, sizeof cur);
  /* The staged file must be whole and valid before anything on disk changes. */
  KILN_RETURN_IF_ERROR(verify_staged(dir, &cur, role, staged, public_key, err));

  char member[PATH_CAP], tmp[PATH_CAP];
  KILN_RETURN_IF_ERROR(join(dir, e.file, member, err));
  uint64_t size, hash;
  kiln_error_t ignored;
  if (identify(member, &size, &hash, &ignored) != KILN_STATUS_OK || size != e.size ||
      hash != e.header_xxh64) {
    if (snprintf(tmp, sizeof tmp, "%s.tmp", member) >= (int)sizeof tmp)
      return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "path too long");
    KILN_RETURN_IF_ERROR(copy_file(staged, tmp, err));
    if (rename(tmp, member) != 0)
      return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: %s", member, strerror(errno));
  }
  next = cur;
  uint32_t i = 0;
  while (i < next.n_entries && strcmp(next.entries[i].role, role) != 0)
    ++i;
  if (i == next.n_entries) {
    if (next.n_entries == KILN_MANIFEST_MAX_ENTRIES)
      return kiln_error_set(err, KILN_STATUS_OUT_OF_RANGE, "the set already has %d members",
                            KILN_MANIFEST_MAX_ENTRIES);
    ++next.n_entries;
  }
  next.entries[i] = e;
  next.generation = cur.generation + 1;
  KILN_RETURN_IF_ERROR(sync_dir(dir, err)); /* the member's name, before the manifest's */
  KILN_RETURN_IF_ERROR(commit(dir, &next, have_current, err));
  collect(dir, &next, have_current ? &cur : NULL);
  return KILN_STATUS_OK;
}

kiln_status_t kiln_manifest_rollback(const char *dir, kiln_error_t *err) {
  kiln_error_clear(err);
  if (!dir)
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL dir");
  char cur_path[PATH_CAP], prev_path[PATH_CAP];
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE, cur_path, err));
  KILN_RETURN_IF_ERROR(join(dir, KILN_MANIFEST_FILE ".prev", prev_path, err));
  kiln_manifest_t cur, prev;
  KILN_RETURN_IF_ERROR(parse(cur_path, &cur, err));
  if (parse(prev_path, &prev, err) != KILN_STATUS_OK)
    return kiln_error_set(err, KILN_STATUS_IO_ERROR, "%s: no previous set to go back to",
                          dir);
  KILN_RETURN_IF_ERROR(check_members(dir, &prev, err));
  prev.generation = cur.generation + 1;
  KILN_RETURN_IF_ERROR(commit(dir, &prev, 1, err));
  return KILN_STATUS_OK;
}

static void close_set(kiln_artifact_t *base, kiln_module_t **mods, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    kiln_module_close(mods[i]);
  kiln_artifact_close(base);
}

kiln_status_t kiln_manifest_open(const char *dir, const kiln_artifact_options_t *options,
                                 kiln_artifact_t **out_base, kiln_module_t **out_modules,
                                 uint32_t cap, uint32_t *out_n, kiln_error_t *err) {
  kiln_error_clear(err);
  if (!dir || !out_base || !out_n || (cap && !out_modules))
    return kiln_error_set(err, KILN_STATUS_INVALID_ARGUMENT, "NULL argument");
  *out_base = NULL;
  *out_n = 0;
  kiln_manifest_t m;
  KILN_RETURN_IF_ERROR(kiln_manifest_load(dir, &m, err));
  char path[PATH_CAP];
  KILN_RETURN_IF_ERROR(kiln_manifest_path(dir, &m, "base", path, sizeof path, err));
  kiln_artifact_t *base = NULL;
  KILN_RETURN_IF_ERROR(kiln_artifact_open_with(path, options, &base, err));
  const uint8_t *key = options ? options->public_key : NULL;
  uint32_t n = 0;
  for (uint32_t i = 0; i < m.n_entries; ++i) {
    const kiln_manifest_entry_t *e = &m.entries[i];
    if (!strcmp(e->role, "base"))
      continue;
    kiln_status_t st = n < cap ? join(dir, e->file, path, err)
                               : kiln_error_set(err, KILN_STATUS_BUFFER_TOO_SMALL,
                                                "the set has more than %u modules", cap);
    if (st == KILN_STATUS_OK)
      st = kiln_module_open(path, key, NULL, &out_modules[n], err);
    if (st == KILN_STATUS_OK && (st = kiln_module_check(out_modules[n], base, err)) != KILN_STATUS_OK)
      kiln_module_close(out_modules[n]);
    else if (st == KILN_STATUS_OK)
      ++n;
    if (st != KILN_STATUS_OK) {
      close_set(base, out_modules, n);
      char role[KILN_MANIFEST_NAME_MAX + 32];
      snprintf(role, sizeof role, "%s: member '%s'", dir, e->role);
      return kiln_error_prefix(err, st, role);
    }
  }
  *out_base = base;
  *out_n = n;
  return KILN_STATUS_OK;
}
