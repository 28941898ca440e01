//! The names Node gives OS error numbers (`ENOENT`, …), so JS callers can branch on `code`.

/// The symbolic name of `errno`, where this platform's number has one Node uses.
#[cfg(unix)]
pub fn name(errno: i32) -> Option<&'static str> {
  Some(match errno {
    libc::EPERM => "EPERM",
    libc::ENOENT => "ENOENT",
    libc::EIO => "EIO",
    libc::E2BIG => "E2BIG",
    libc::ENOEXEC => "ENOEXEC",
    libc::EAGAIN => "EAGAIN",
    libc::ENOMEM => "ENOMEM",
    libc::EACCES => "EACCES",
    libc::ENOTDIR => "ENOTDIR",
    libc::EISDIR => "EISDIR",
    libc::EINVAL => "EINVAL",
    libc::ENFILE => "ENFILE",
    libc::EMFILE => "EMFILE",
    libc::ETXTBSY => "ETXTBSY",
    libc::EPIPE => "EPIPE",
    libc::ENAMETOOLONG => "ENAMETOOLONG",
    libc::ELOOP => "ELOOP",
    libc::ECONNREFUSED => "ECONNREFUSED",
    libc::ECONNRESET => "ECONNRESET",
    libc::ETIMEDOUT => "ETIMEDOUT",
    libc::EHOSTUNREACH => "EHOSTUNREACH",
    libc::ENETUNREACH => "ENETUNREACH",
    libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
    _ => return None,
  })
}

#[cfg(not(unix))]
pub fn name(_errno: i32) -> Option<&'static str> {
  None
}

#[cfg(all(test, unix))]
mod tests {
  #[test]
  fn names_of_common_errors() {
    assert_eq!(super::name(libc::ENOENT), Some("ENOENT"));
    assert_eq!(super::name(libc::EACCES), Some("EACCES"));
    assert_eq!(super::name(99_999), None);
  }
}
