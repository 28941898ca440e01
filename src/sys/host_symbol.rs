//! Functions the host process itself exports (libuv's, under Node), found by name.
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

/// The address of the host's exported function `name`, if it exports one.
#[cfg(unix)]
pub fn find(name: &CStr) -> Option<NonNull<c_void>> {
  // SAFETY: dlsym with RTLD_DEFAULT only looks a symbol up.
  NonNull::new(unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) })
}

/// The address of the host's exported function `name`, if its executable exports one.
#[cfg(windows)]
pub fn find(name: &CStr) -> Option<NonNull<c_void>> {
  use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
  // SAFETY: a null name asks for the executable's own module, which is never freed.
  let module = unsafe { GetModuleHandleW(std::ptr::null()) };
  if module.is_null() {
    return None;
  }
  // SAFETY: `module` is loaded; `name` is NUL-terminated.
  let function = unsafe { GetProcAddress(module, name.as_ptr().cast()) }?;
  NonNull::new(function as *mut c_void)
}
