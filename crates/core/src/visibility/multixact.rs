//! MultiXact members read offline from `<pgdata>/pg_multixact` (layout of
//! `access/transam/multixact.c` and `access/multixact.h`, PostgreSQL 9.3 to 18, where
//! `MultiXactOffset` is 32 bits).
//!
//! `offsets/` holds, for each MultiXactId, the position of its first member in `members/`: one
//! u32 per MultiXactId, `BLCKSZ / 4` to a page. A MultiXact's members run from its offset up to
//! the offset of the next MultiXactId (or, for the newest one, `nextMultiOffset`). `members/`
//! stores members in groups of four: four flag bytes (one per member, its `MultiXactStatus`)
//! followed by the four TransactionIds, 20 bytes a group, `BLCKSZ / 20` groups to a page; the
//! bytes past the last whole group of a page are unused. MultiXactIds and offsets both wrap
//! around at 2^32: MultiXactId 0 is never used, and offset 0 is skipped the first time it comes
//! round (its member slot holds XID 0).

use std::path::Path;

use serde::Serialize;

use crate::visibility::slru::SlruDir;

/// `FirstMultiXactId` (access/multixact.h).
pub const FIRST_MULTIXACT_ID: u32 = 1;
/// `MULTIXACT_FLAGBYTES_PER_GROUP` = `MULTIXACT_MEMBERS_PER_MEMBERGROUP` (multixact.c): one flag
/// byte (`MXACT_MEMBER_BITS_PER_XACT` = 8) per member.
pub const MEMBERS_PER_GROUP: u32 = 4;
/// `MULTIXACT_MEMBERGROUP_SIZE` (multixact.c): 4 flag bytes + 4 TransactionIds.
pub const MEMBERGROUP_SIZE: u32 = 4 + 4 * 4;
/// Members of one MultiXact beyond which the offsets are taken to be garbage: far more than
/// `MAX_BACKENDS` (2^18 - 1, postmaster.h) plus prepared transactions could ever hold a tuple.
pub const MAX_PLAUSIBLE_MEMBERS: u32 = 1 << 20;

/// `MultiXactStatus` (access/multixact.h), the lock mode or update kind of one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MultiXactStatus {
    ForKeyShare,
    ForShare,
    ForNoKeyUpdate,
    ForUpdate,
    NoKeyUpdate,
    Update,
}

impl MultiXactStatus {
    pub fn from_code(c: u8) -> Option<MultiXactStatus> {
        Some(match c {
            0 => MultiXactStatus::ForKeyShare,
            1 => MultiXactStatus::ForShare,
            2 => MultiXactStatus::ForNoKeyUpdate,
            3 => MultiXactStatus::ForUpdate,
            4 => MultiXactStatus::NoKeyUpdate,
            5 => MultiXactStatus::Update,
            _ => return None,
        })
    }

    /// `ISUPDATE_from_mxstatus` (access/multixact.h): the member updated or deleted the tuple.
    pub fn is_update(self) -> bool {
        matches!(self, MultiXactStatus::NoKeyUpdate | MultiXactStatus::Update)
    }

    /// The words `pg_get_multixact_members()` uses (`mxstatus_to_string`, multixact.c).
    pub fn name(self) -> &'static str {
        match self {
            MultiXactStatus::ForKeyShare => "keysh",
            MultiXactStatus::ForShare => "sh",
            MultiXactStatus::ForNoKeyUpdate => "fornokeyupd",
            MultiXactStatus::ForUpdate => "forupd",
            MultiXactStatus::NoKeyUpdate => "nokeyupd",
            MultiXactStatus::Update => "upd",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MultiXactMember {
    pub xid: u32,
    pub status: MultiXactStatus,
}

/// The next MultiXactId after `m`, skipping 0 when it wraps (multixact.c does the same).
pub fn next_multi(m: u32) -> u32 {
    let n = m.wrapping_add(1);
    if n < FIRST_MULTIXACT_ID {
        FIRST_MULTIXACT_ID
    } else {
        n
    }
}

/// `<pgdata>/pg_multixact`, read-only and lazily; `Sync`, cheap to build.
#[derive(Debug)]
pub struct MultiXactFiles {
    offsets: SlruDir,
    members: SlruDir,
    /// `nextMulti` and `nextMultiOffset` of the latest checkpoint (pg_control): where the newest
    /// MultiXact of that moment ends. Later MultiXacts end where the following one starts.
    next: Option<(u32, u32)>,
}

impl MultiXactFiles {
    /// `dir` is `<pgdata>/pg_multixact`; `next` is pg_control's (`nextMulti`, `nextMultiOffset`).
    pub fn new(dir: &Path, blcksz: u32, next: Option<(u32, u32)>) -> MultiXactFiles {
        MultiXactFiles {
            offsets: SlruDir::new(&dir.join("offsets"), blcksz),
            members: SlruDir::new(&dir.join("members"), blcksz),
            next,
        }
    }

    fn offsets_per_page(&self) -> u32 {
        // MULTIXACT_OFFSETS_PER_PAGE = BLCKSZ / sizeof(MultiXactOffset) (multixact.c)
        self.offsets.blcksz() / 4
    }

    fn groups_per_page(&self) -> u32 {
        // MULTIXACT_MEMBERGROUPS_PER_PAGE (multixact.c)
        self.members.blcksz() / MEMBERGROUP_SIZE
    }

    /// The stored starting offset of `multi` (0 when never written), `None` if the page is absent.
    pub fn offset_of(&self, multi: u32) -> Option<u32> {
        let per = self.offsets_per_page();
        self.offsets.u32(multi / per, (multi % per) * 4)
    }

    /// Where member number `off` lives: (page, byte of its flag, byte of its XID)
    /// (`MXOffsetToMemberPage`, `MXOffsetToFlagsOffset`, `MXOffsetToMemberOffset`).
    fn member_location(&self, off: u32) -> (u32, u32, u32) {
        let gpp = self.groups_per_page();
        let page = off / (gpp * MEMBERS_PER_GROUP);
        let group_at = ((off / MEMBERS_PER_GROUP) % gpp) * MEMBERGROUP_SIZE;
        let k = off % MEMBERS_PER_GROUP;
        (page, group_at + k, group_at + MEMBERS_PER_GROUP + k * 4)
    }

    /// Member number `off`: `Ok(None)` for an unused slot (XID 0), `Err` when it is not on disk.
    pub fn member_at(&self, off: u32) -> Result<Option<MultiXactMember>, String> {
        let (page, flag_at, xid_at) = self.member_location(off);
        let missing = || format!("pg_multixact/members page {page} is not on disk");
        let xid = self.members.u32(page, xid_at).ok_or_else(missing)?;
        if xid == 0 {
            return Ok(None);
        }
        let code = self.members.byte(page, flag_at).ok_or_else(missing)?;
        let status = MultiXactStatus::from_code(code)
            .ok_or_else(|| format!("member {off} has an impossible status {code} in pg_multixact/members"))?;
        Ok(Some(MultiXactMember { xid, status }))
    }

    /// All members of `multi`, as `GetMultiXactIdMembers` would return them, or why they cannot
    /// be read from the files (page absent, entry not written yet, implausible offsets).
    pub fn members(&self, multi: u32) -> Result<Vec<MultiXactMember>, String> {
        if multi < FIRST_MULTIXACT_ID {
            return Err("MultiXactId 0 is invalid".into());
        }
        let start = self
            .offset_of(multi)
            .ok_or_else(|| format!("the pg_multixact/offsets page of MultiXact {multi} is not on disk"))?;
        if start == 0 {
            return Err(format!("MultiXact {multi} has no offset on disk (not written out yet)"));
        }
        let after = next_multi(multi);
        let end = match self.next {
            Some((next, next_off)) if next == after => next_off,
            _ => match self.offset_of(after) {
                Some(o) if o != 0 => o,
                _ => {
                    return Err(format!(
                        "the end of MultiXact {multi} is not on disk (MultiXact {after} has no offset yet)"
                    ))
                }
            },
        };
        let n = end.wrapping_sub(start);
        if n == 0 || n > MAX_PLAUSIBLE_MEMBERS {
            return Err(format!("MultiXact {multi} spans an implausible {n} members (offsets {start}..{end})"));
        }
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let off = start.wrapping_add(i);
            match self.member_at(off)? {
                Some(m) => out.push(m),
                // the slot of offset 0 is skipped when offsets wrap; any other empty slot means
                // the page on disk predates the MultiXact
                None if off == 0 => {}
                None => return Err(format!("member {off} of MultiXact {multi} is not on disk (XID 0)")),
            }
        }
        if out.is_empty() {
            return Err(format!("MultiXact {multi} has no members on disk"));
        }
        Ok(out)
    }

    /// The updating member of `multi` (`MultiXactIdGetUpdateXid`): `Ok(None)` when every member
    /// only locks.
    pub fn updater(&self, multi: u32) -> Result<Option<u32>, String> {
        let mut upd = None;
        for m in self.members(multi)? {
            if m.status.is_update() {
                if upd.is_some_and(|u| u != m.xid) {
                    return Err(format!("MultiXact {multi} has two updating members"));
                }
                upd = Some(m.xid);
            }
        }
        Ok(upd)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Builds pg_multixact files in a temp dir with `(multi, offset, members)` written the way
    /// RecordNewMultiXact lays them out.
    pub(crate) struct Builder {
        pub dir: PathBuf,
        blcksz: u32,
    }

    impl Builder {
        pub fn new(tag: &str, blcksz: u32) -> Builder {
            let dir = std::env::temp_dir().join(format!("pgsurgeon-mx-{tag}-{}", std::process::id()));
            std::fs::remove_dir_all(&dir).ok();
            std::fs::create_dir_all(dir.join("offsets")).unwrap();
            std::fs::create_dir_all(dir.join("members")).unwrap();
            Builder { dir, blcksz }
        }

        fn put(&self, sub: &str, pageno: u32, byte: u32, bytes: &[u8]) {
            let segno = pageno / 32;
            let path = self.dir.join(sub).join(format!("{segno:04X}"));
            let mut seg = crate::sources::backup::vfs::read(&path).unwrap_or_default();
            let at = ((pageno % 32) * self.blcksz + byte) as usize;
            let need = ((pageno % 32 + 1) * self.blcksz) as usize;
            if seg.len() < need {
                seg.resize(need, 0);
            }
            seg[at..at + bytes.len()].copy_from_slice(bytes);
            std::fs::write(&path, &seg).unwrap();
        }

        pub fn offset(&self, multi: u32, off: u32) {
            let per = self.blcksz / 4;
            self.put("offsets", multi / per, (multi % per) * 4, &off.to_le_bytes());
        }

        pub fn member(&self, off: u32, xid: u32, status: u8) {
            let gpp = self.blcksz / 20;
            let page = off / (gpp * 4);
            let g = ((off / 4) % gpp) * 20;
            self.put("members", page, g + off % 4, &[status]);
            self.put("members", page, g + 4 + (off % 4) * 4, &xid.to_le_bytes());
        }

        /// Multi at `off` with these members, and the next multi's offset.
        pub fn multi(&self, multi: u32, off: u32, members: &[(u32, u8)]) {
            self.offset(multi, off);
            let mut o = off;
            for (x, s) in members {
                self.member(o, *x, *s);
                o = o.wrapping_add(1);
            }
            self.offset(next_multi(multi), o);
        }
    }

    impl Drop for Builder {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.dir).ok();
        }
    }

    #[test]
    fn layout_constants() {
        // 8 KB pages: 2048 offsets, 409 groups = 1636 members a page (multixact.c)
        let b = Builder::new("const", 8192);
        let f = MultiXactFiles::new(&b.dir, 8192, None);
        assert_eq!(f.offsets_per_page(), 2048);
        assert_eq!(f.groups_per_page() * MEMBERS_PER_GROUP, 1636);
        assert_eq!(f.member_location(0), (0, 0, 4));
        assert_eq!(f.member_location(5), (0, 21, 28));
        assert_eq!(f.member_location(1635), (0, 408 * 20 + 3, 408 * 20 + 4 + 12));
        assert_eq!(f.member_location(1636), (1, 0, 4));
        assert_eq!(next_multi(u32::MAX), 1);
        assert_eq!(next_multi(7), 8);
    }

    #[test]
    fn members_and_updater() {
        let b = Builder::new("basic", 8192);
        b.multi(1, 1, &[(740, 0), (741, 1)]); // two lockers: key share, share
        b.multi(2, 3, &[(742, 0), (743, 5)]); // key share + update
        b.multi(3, 5, &[(744, 2), (745, 4)]); // for no key update (lock) + no key update
        b.multi(4, 7, &[(746, 3)]); // for update only
        let f = MultiXactFiles::new(&b.dir, 8192, None);
        let m = f.members(1).unwrap();
        assert_eq!(
            m,
            vec![
                MultiXactMember { xid: 740, status: MultiXactStatus::ForKeyShare },
                MultiXactMember { xid: 741, status: MultiXactStatus::ForShare }
            ]
        );
        assert_eq!(f.updater(1), Ok(None));
        assert_eq!(f.updater(2), Ok(Some(743)));
        assert_eq!(f.updater(3), Ok(Some(745)));
        assert_eq!(f.updater(4), Ok(None));
        // multi 5 was never written: offset 0
        assert!(f.members(5).is_err());
        assert!(f.members(0).is_err());
        // a page that is not on disk
        assert!(f.members(1_000_000).unwrap_err().contains("not on disk"));
    }

    #[test]
    fn newest_multi_ends_at_next_offset_from_control() {
        let b = Builder::new("newest", 8192);
        b.offset(9, 20);
        b.member(20, 900, 1);
        b.member(21, 901, 5);
        // offsets of multi 10 not written: only pg_control knows where 9 ends
        let f = MultiXactFiles::new(&b.dir, 8192, None);
        assert!(f.members(9).unwrap_err().contains("end of MultiXact 9"));
        let f = MultiXactFiles::new(&b.dir, 8192, Some((10, 22)));
        assert_eq!(f.updater(9), Ok(Some(901)));
        assert_eq!(f.members(9).unwrap().len(), 2);
    }

    #[test]
    fn members_not_flushed_are_not_guessed() {
        let b = Builder::new("unflushed", 8192);
        b.offset(3, 10);
        b.offset(4, 12);
        b.member(10, 500, 0);
        // member 11 left zero: the members page on disk predates the multi
        let f = MultiXactFiles::new(&b.dir, 8192, None);
        assert!(f.members(3).unwrap_err().contains("XID 0"));
        // impossible status byte
        b.member(11, 501, 9);
        assert!(MultiXactFiles::new(&b.dir, 8192, None).members(3).unwrap_err().contains("impossible status"));
        // garbage offsets
        b.offset(6, 100);
        b.offset(7, 50);
        assert!(MultiXactFiles::new(&b.dir, 8192, None).members(6).unwrap_err().contains("implausible"));
    }

    #[test]
    fn members_across_page_and_offset_wraparound() {
        let b = Builder::new("wrap", 8192);
        // a multi whose members straddle a members page boundary (1636 a page)
        b.multi(100, 1634, &[(10, 0), (11, 1), (12, 5), (13, 0)]);
        let f = MultiXactFiles::new(&b.dir, 8192, None);
        assert_eq!(f.members(100).unwrap().iter().map(|m| m.xid).collect::<Vec<_>>(), vec![10, 11, 12, 13]);
        assert_eq!(f.updater(100), Ok(Some(12)));
        // offsets wrap: a multi starting at 2^32 - 2 runs through 2^32 - 1, then (0 skipped) 1
        let b = Builder::new("wrap2", 8192);
        let start = u32::MAX - 1;
        b.offset(5000, start);
        b.member(start, 20, 0);
        b.member(u32::MAX, 21, 1);
        b.member(1, 22, 4);
        b.offset(5001, 2);
        let f = MultiXactFiles::new(&b.dir, 8192, None);
        let m = f.members(5000).unwrap();
        assert_eq!(m.iter().map(|m| m.xid).collect::<Vec<_>>(), vec![20, 21, 22]);
        assert_eq!(f.updater(5000), Ok(Some(22)));
        // MultiXactIds wrap too: after u32::MAX comes 1
        let b = Builder::new("wrap3", 8192);
        b.multi(u32::MAX, 40, &[(30, 3)]);
        b.offset(1, 41);
        let f = MultiXactFiles::new(&b.dir, 8192, None);
        assert_eq!(f.members(u32::MAX).unwrap().len(), 1);
        assert_eq!(f.updater(u32::MAX), Ok(None));
    }
}
