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
  Mapped(crate::sys::mapping::Mapping),
  Heap(Vec<u8>),
}

impl LineRegion {
  /// Room for `capacity` bytes.
  pub fn new(capacity: usize) -> Self {
    if let Some(mapping) = crate::sys::mapping::Mapping::new(capacity) {
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
      Memory::Mapped(mapping) => &mapping.bytes()[..self.len],
      Memory::Heap(vec) => vec,
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
