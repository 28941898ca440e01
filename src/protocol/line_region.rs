//! Memory for one long line, reserved up front at the line's cap so it never moves or
//! copies while it grows. On Linux it is an anonymous mapping advised to use transparent huge
//! pages: on the machines we measured, first-touch page faults were most of the cost of
//! receiving a 10 MiB line (a 4 KiB fault per 4 KiB read), and a 2 MiB page takes one
//! fault for 512 of them. Unmapping on drop hands the pages straight back to the system
//! instead of leaving a hole in the allocator's arenas.
//!
//! Elsewhere, or when the mapping is refused, it is a plain growing `Vec`.

/// A line's bytes, appended to as they arrive; read-only once shared as `Bytes`.
pub struct LineRegion {
  memory: Memory,
  len: usize,
}

enum Memory {
  #[cfg(unix)]
  Mapped(mapped::Mapping),
  Heap(Vec<u8>),
}

impl LineRegion {
  /// Room for `capacity` bytes.
  pub fn new(capacity: usize) -> Self {
    #[cfg(unix)]
    if let Some(mapping) = mapped::Mapping::new(capacity) {
      return LineRegion {
        memory: Memory::Mapped(mapping),
        len: 0,
      };
    }
    LineRegion {
      memory: Memory::Heap(Vec::new()),
      len: 0,
    }
  }

  pub fn len(&self) -> usize {
    self.len
  }

  pub fn is_empty(&self) -> bool {
    self.len == 0
  }

  /// Appends `bytes`, which the caller keeps within the capacity asked for.
  pub fn extend(&mut self, bytes: &[u8]) {
    match &mut self.memory {
      #[cfg(unix)]
      Memory::Mapped(mapping) => {
        let end = self.len + bytes.len();
        mapping.bytes_mut()[self.len..end].copy_from_slice(bytes);
      }
      Memory::Heap(vec) => vec.extend_from_slice(bytes),
    }
    self.len += bytes.len();
  }
}

impl AsRef<[u8]> for LineRegion {
  fn as_ref(&self) -> &[u8] {
    match &self.memory {
      #[cfg(unix)]
      Memory::Mapped(mapping) => &mapping.bytes()[..self.len],
      Memory::Heap(vec) => vec,
    }
  }
}

#[cfg(unix)]
mod mapped {
  use std::ptr;

  const HUGE_PAGE: usize = 2 << 20;

  /// An anonymous private mapping, its usable part aligned to a huge page.
  pub struct Mapping {
    map: *mut libc::c_void,
    map_len: usize,
    start: *mut u8,
    capacity: usize,
  }

  // SAFETY: the mapping is owned by one `Mapping`; `&mut` access is unique and `&` access
  // only reads, so it may move between threads and be read from several.
  unsafe impl Send for Mapping {}
  // SAFETY: as for Send: shared access only reads.
  unsafe impl Sync for Mapping {}

  impl Mapping {
    pub fn new(capacity: usize) -> Option<Self> {
      let map_len = capacity.checked_add(HUGE_PAGE)?;
      // SAFETY: a fresh anonymous mapping; no existing memory is touched. NORESERVE: only
      // the pages a line actually fills are ever backed.
      let map = unsafe {
        libc::mmap(
          ptr::null_mut(),
          map_len,
          libc::PROT_READ | libc::PROT_WRITE,
          libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
          -1,
          0,
        )
      };
      if map == libc::MAP_FAILED {
        return None;
      }
      let skip = (HUGE_PAGE - map as usize % HUGE_PAGE) % HUGE_PAGE;
      // SAFETY: skip < HUGE_PAGE, so start..start+capacity lies inside the mapping.
      let start = unsafe { map.cast::<u8>().add(skip) };
      #[cfg(target_os = "linux")]
      // SAFETY: advice on our own mapping; refusal (no THP) leaves ordinary pages.
      unsafe {
        libc::madvise(start.cast(), capacity, libc::MADV_HUGEPAGE)
      };
      Some(Mapping {
        map,
        map_len,
        start,
        capacity,
      })
    }

    pub fn bytes(&self) -> &[u8] {
      // SAFETY: start..start+capacity is mapped readable (zero-filled until written) for
      // the life of self.
      unsafe { std::slice::from_raw_parts(self.start, self.capacity) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
      // SAFETY: as in bytes(), and &mut self makes this the only access.
      unsafe { std::slice::from_raw_parts_mut(self.start, self.capacity) }
    }
  }

  impl Drop for Mapping {
    fn drop(&mut self) {
      // SAFETY: unmaps exactly the mapping made in new(); nothing refers to it any more.
      unsafe { libc::munmap(self.map, self.map_len) };
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn appended_bytes_read_back_and_outlive_the_region_as_bytes() {
    let mut region = LineRegion::new(10 << 20);
    assert!(region.is_empty());
    let piece = vec![b'x'; 3 << 20];
    for _ in 0..3 {
      region.extend(&piece);
    }
    region.extend(b"end");
    assert_eq!(region.len(), (9 << 20) + 3);
    let bytes = bytes::Bytes::from_owner(region);
    let line = bytes.slice(..bytes.len() - 3);
    drop(bytes);
    assert!(line.iter().all(|&b| b == b'x'));
    let moved = std::thread::spawn(move || line.len()).join().ok();
    assert_eq!(moved, Some(9 << 20));
  }
}
