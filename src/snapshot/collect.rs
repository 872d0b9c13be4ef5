//! What a tree's store no longer needs goes: when a conversation that kept turns in it is gone
//! (session-log retention deleted its records), the manifests and blobs that no remaining
//! conversation, interrupted restore or latest walk refers to are deleted. Files younger than
//! an hour are left (another agentty may have just written one it has not recorded yet).

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::manifest::{BlobId, Content};
use super::records::{Records, TurnRecord};
use super::store::Store;

/// Files this young are never collected.
pub(crate) const GRACE: Duration = Duration::from_secs(3600);

/// Collects `store` if a conversation of it is gone (`snapshots`: the folder of every
/// conversation's records; `keep`: manifests in use that no record names yet). Returns the
/// files deleted.
pub(crate) fn collect(store: &Store, snapshots: &Path, keep: &[BlobId], grace: Duration) -> usize {
    let users = store.dir().join("users");
    let Ok(entries) = std::fs::read_dir(&users) else {
        return 0;
    };
    let mut gone = false;
    let mut live = Vec::new();
    for entry in entries.flatten() {
        let stem = entry.file_name();
        if snapshots.join(&stem).is_dir() {
            live.push(stem);
        } else {
            gone = true;
            let _ = std::fs::remove_file(entry.path());
        }
    }
    if !gone {
        return 0;
    }
    let mut roots: Vec<BlobId> = keep.to_vec();
    for stem in live {
        let records = Records::new(snapshots.join(stem), store.clone());
        let Ok(turns) = std::fs::read_dir(records.dir().join("turns")) else {
            continue;
        };
        for turn in turns.flatten() {
            let record = crate::files::read_limited(&turn.path(), 64 * 1024)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<TurnRecord>(&bytes).ok());
            if let Some((before, after)) = record.and_then(|record| record.ids().ok()) {
                roots.extend([before, after]);
            }
        }
    }
    roots.extend(super::journal::referenced(store));
    roots.sort_unstable();
    roots.dedup();
    // Every manifest reached (with the deltas' bases, which their files need), and every blob
    // a root's snapshot names (a blob only a base named, and no later state, is not needed).
    let mut manifests: HashSet<BlobId> = HashSet::new();
    let mut blobs: HashSet<BlobId> = HashSet::new();
    for root in roots {
        let mut chain = Some(root);
        while let Some(id) = chain {
            if !manifests.insert(id) {
                break;
            }
            chain = store
                .stored_manifest(id)
                .ok()
                .and_then(|stored| stored.base);
        }
        if let Ok(manifest) = store.manifest(root) {
            for entry in manifest.entries.values() {
                if let Content::Kept(blob) = entry.content {
                    blobs.insert(blob);
                }
            }
        }
    }
    let old_enough = |path: &Path| {
        std::fs::symlink_metadata(path)
            .and_then(|metadata| metadata.modified())
            .is_ok_and(|modified| {
                SystemTime::now()
                    .duration_since(modified)
                    .is_ok_and(|age| age >= grace)
            })
    };
    let mut deleted = 0;
    if let Ok(files) = std::fs::read_dir(store.dir().join("manifests")) {
        for file in files.flatten() {
            let name = file.file_name();
            let id = name
                .to_str()
                .and_then(|name| u128::from_str_radix(name, 16).ok());
            if id.is_some_and(|id| !manifests.contains(&id)) && old_enough(&file.path()) {
                deleted += usize::from(std::fs::remove_file(file.path()).is_ok());
            }
        }
    }
    if let Ok(folders) = std::fs::read_dir(store.dir().join("blobs")) {
        for folder in folders.flatten() {
            let prefix = folder.file_name().to_string_lossy().into_owned();
            for file in std::fs::read_dir(folder.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = format!("{prefix}{}", file.file_name().to_string_lossy());
                let id = u128::from_str_radix(&name, 16).ok();
                if id.is_some_and(|id| !blobs.contains(&id)) && old_enough(&file.path()) {
                    deleted += usize::from(std::fs::remove_file(file.path()).is_ok());
                }
            }
        }
    }
    deleted
}
