/* kiln runtime-min: a set of artifacts on disk, updated atomically with rollback.
 *
 * An app ships a base artifact and, later, separately compiled modules (an adapter, a
 * domain head, a filter); an update must never leave a half-written model behind, whatever
 * kills the process, and a bad version must be undone without a download. A directory
 * holds the set: the member files, each under a name of its own (ROLE-<checksum>.kiln,
 * never overwritten), and `kiln-manifest`, a small text file naming them:
 *
 *   kiln-manifest 1
 *   generation 7
 *   <role> <file> <size> <header xxh64, 16 hex digits>
 *
 * The header checksum is the artifact preamble's: it covers the header, which holds every
 * section's checksum, so it names the content (a renamed or truncated file does not
 * match). An install writes the new member and the new manifest beside the old, syncs
 * them, and renames the manifest over the old one: that rename is the only commit point,
 * so after a crash at any moment `kiln-manifest` names either the old set or the new one,
 * both complete. The previous manifest stays as `kiln-manifest.prev` with its files, for
 * kiln_manifest_rollback. Separate library (kiln_update), POSIX files. */
#ifndef KILN_UPDATE_H_
#define KILN_UPDATE_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"
#include "kiln/module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_MANIFEST_FILE "kiln-manifest"
#define KILN_MANIFEST_MAX_ENTRIES 32
#define KILN_MANIFEST_NAME_MAX 128

typedef struct kiln_manifest_entry_s {
  char role[KILN_MANIFEST_NAME_MAX]; /* "base" (the model), "adapter:tone", "head", ... */
  char file[KILN_MANIFEST_NAME_MAX]; /* a name inside the directory */
  uint64_t size;
  uint64_t header_xxh64;
} kiln_manifest_entry_t;

typedef struct kiln_manifest_s {
  uint64_t generation; /* +1 per install or rollback */
  uint32_t n_entries;
  kiln_manifest_entry_t entries[KILN_MANIFEST_MAX_ENTRIES];
} kiln_manifest_t;

/* Reads DIR/kiln-manifest and checks every member: present, of its size, with its header
 * checksum. KILN_STATUS_IO_ERROR when there is no manifest, KILN_STATUS_CORRUPT when it
 * or a member does not hold. */
kiln_status_t kiln_manifest_load(const char *dir, kiln_manifest_t *out,
                                 kiln_error_t *out_error);

/* DIR/<file of ROLE> into out (cap bytes): the path to give kiln_artifact_open.
 * KILN_STATUS_INVALID_ARGUMENT when the manifest has no such role, BUFFER_TOO_SMALL when
 * the path does not fit. */
kiln_status_t kiln_manifest_path(const char *dir, const kiln_manifest_t *manifest,
                                 const char *role, char *out, size_t cap,
                                 kiln_error_t *out_error);

/* Installs the artifact or module at `staged` (any path) as ROLE, replacing that role's
 * member or adding it: the file is opened and verified first (with public_key, it must be
 * signed by it; a module must fit the set's current "base", which must be a model),
 * copied into DIR and synced, then the new manifest is committed. Afterwards files
 * named by neither the manifest nor the previous one are removed. A DIR without a manifest
 * starts an empty set. Roles: letters, digits, '-', '_', ':' and '.', 1-63 bytes. */
kiln_status_t kiln_manifest_install(const char *dir, const char *role, const char *staged,
                                    const uint8_t *public_key, kiln_error_t *out_error);

/* Opens the set: the member of role "base" as a model artifact (options as for
 * kiln_artifact_open_with; NULL: the defaults) and every other member as a module
 * (kiln/module.h, with options->public_key when set) that must fit that base, up to cap of
 * them into out_modules (*out_n of them). A module compiled for another base - after the
 * base alone was updated, say - is refused (KILN_STATUS_UNSUPPORTED, naming the member);
 * nothing stays open on any error. The caller closes what it got; kiln_session_apply_modules
 * then applies the modules to a session of the base. */
kiln_status_t kiln_manifest_open(const char *dir, const kiln_artifact_options_t *options,
                                 kiln_artifact_t **out_base, kiln_module_t **out_modules,
                                 uint32_t cap, uint32_t *out_n, kiln_error_t *out_error);

/* Makes the previous set current again (its files were kept). KILN_STATUS_IO_ERROR when
 * there is none. The set rolled back from becomes the previous one. */
kiln_status_t kiln_manifest_rollback(const char *dir, kiln_error_t *out_error);

#ifdef __cplusplus
}
#endif

#endif /* KILN_UPDATE_H_ */
