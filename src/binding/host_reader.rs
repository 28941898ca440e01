//! Reads a stdio server's stdout on the JS thread's own event loop. An answer then wakes
//! the JS thread straight from the pipe, as a hand-written client's
//! `child.stdout.on("data")` would, instead of waking a runtime thread that then wakes the
//! JS thread (two cold wake-ups per answer on an idle machine).
//!
//! Under Node a libuv poll handle watches the descriptor and we read it ourselves. Bun has
//! no `uv_poll_*` (calling it aborts the process), so there Bun's own reader reads it
//! (`Bun.file(fd).stream()`, which leaves the descriptor to us) and we take its chunks.
use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::{Either, LocalBoxFuture};
use futures::FutureExt;
use napi::sys;

use super::executor;
use super::host::call_method;
use super::js::{Held, Js, Thrown, Value};
use super::pump::{self, HostReaderHooks, Shared};
use super::uv::{uv, Uv, UV_POLL, UV_READABLE};
use crate::transport::stdio::{HostReader, Readiness, StdoutReader};

#[derive(Clone, Copy)]
enum Runtime {
  Node,
  Bun,
}

fn runtime(js: Js) -> Runtime {
  if super::js::is_bun(js) {
    Runtime::Bun
  } else {
    Runtime::Node
  }
}

/// Offers the JS thread's loop to a stdio transport being spawned.
pub struct LoopReader {
  js: Js,
  side: Shared,
  runtime: Runtime,
}

impl LoopReader {
  /// `None` where the host's loop cannot read for us (a Node without libuv's exports).
  pub fn new(js: Js, side: &Shared) -> Option<Self> {
    let runtime = runtime(js);
    let usable = match runtime {
      Runtime::Node => uv().is_some(),
      Runtime::Bun => true,
    };
    usable.then(|| LoopReader {
      js,
      side: side.clone(),
      runtime,
    })
  }
}

impl HostReader for LoopReader {
  fn start(&self, reader: Box<StdoutReader>) -> Result<(), Box<StdoutReader>> {
    let hooks = match self.runtime {
      Runtime::Node => {
        let poller = Rc::downgrade(&Poller::start(self.js, &self.side, reader)?);
        HostReaderHooks {
          stop: Box::new(move || {
            if let Some(poller) = poller.upgrade() {
              poller.stop();
            }
          }),
          busy: None,
        }
      }
      Runtime::Bun => {
        let bun = BunReader::start(self.js, &self.side, reader)?;
        let weak = Rc::downgrade(&bun);
        HostReaderHooks {
          stop: Box::new(move || bun.stop()),
          busy: Some(Box::new(move |busy| {
            if let Some(bun) = weak.upgrade() {
              bun.set_busy(busy);
            }
          })),
        }
      }
    };
    self.side.borrow_mut().set_host_reader(hooks);
    Ok(())
  }
}

/// Where a Bun transport's reader is: here on the JS thread, or on the runtime receiving
/// the rest of a long line through a channel (with a pool of buffers, kept warm, for it).
enum Feed {
  Here(Box<StdoutReader>),
  Away(Away),
  /// The runtime task failed: the reader is gone (to the supervisor, the end of stdout).
  Lost,
}

struct Away {
  chunks: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
  pool: Arc<Mutex<Vec<Vec<u8>>>>,
  back: LocalBoxFuture<'static, Option<Returned>>,
}

/// The reader back from the runtime, with the chunks it did not take (sent after the line
/// ended), which are the JS thread's to feed, in order.
type Returned = (
  Box<StdoutReader>,
  tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
);

/// Buffers kept for a long line's chunks: enough to cover the runtime's lag behind Bun.
const POOLED_BUFFERS: usize = 8;

impl Feed {
  fn away(js: Js, reader: Box<StdoutReader>) -> Feed {
    let (chunks, mut received) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let pool = Arc::new(Mutex::new(Vec::new()));
    let recycled = pool.clone();
    let back = executor::on_runtime(js, async move {
      let mut reader = reader;
      while reader.receiving_long_line() {
        let Some(mut bytes) = received.recv().await else {
          break;
        };
        reader.feed(&bytes);
        bytes.clear();
        let mut pool = recycled.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < POOLED_BUFFERS {
          pool.push(bytes);
        }
      }
      (reader, received)
    });
    Feed::Away(Away { chunks, pool, back })
  }

  /// Passes bytes on to the runtime (a no-op here).
  fn send(&self, bytes: &[u8]) {
    if let Feed::Away(away) = self {
      let spare = away
        .pool
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop();
      let mut buffer = spare.unwrap_or_default();
      buffer.extend_from_slice(bytes);
      let _ = away.chunks.send(buffer);
    }
  }

  /// The reader, if the runtime already gave it back; else still away.
  fn back_if_done(self, js: Js, side: &Shared) -> Feed {
    match self {
      Feed::Away(mut away) => match (&mut away.back).now_or_never() {
        Some(returned) => Self::arrive(js, side, returned).map_or(Feed::Lost, Feed::Here),
        None => Feed::Away(away),
      },
      other => other,
    }
  }

  /// The reader, brought home: waits for the runtime to let go of it.
  async fn home(self, js: Js, side: &Shared) -> Option<Box<StdoutReader>> {
    match self {
      Feed::Here(reader) => Some(reader),
      Feed::Away(away) => {
        drop(away.chunks);
        Self::arrive(js, side, away.back.await)
      }
      Feed::Lost => None,
    }
  }

  fn arrive(js: Js, side: &Shared, returned: Option<Returned>) -> Option<Box<StdoutReader>> {
    let (mut reader, mut left) = returned?;
    pump::read_here(js, side, || {
      while let Ok(bytes) = left.try_recv() {
        reader.feed(&bytes);
      }
    });
    Some(reader)
  }
}

/// How long a Bun transport stays idle (no request pending) before Bun's stream lets go of
/// its descriptor: the stream keeps Bun alive and has no `unref`, so an idle transport
/// would otherwise keep a finished script running.
const BUN_IDLE: Duration = Duration::from_millis(50);

/// How much of a chunk from Bun is framed per loop turn: a slice's messages are handled in
/// well under a millisecond.
const BUN_SLICE_BYTES: usize = 16 * 1024;

/// Resolves on the next event-loop turn (`setImmediate`), so the host's timers and I/O run.
async fn next_turn(js: Js) {
  let (sender, receiver) = futures::channel::oneshot::channel::<()>();
  let sender = RefCell::new(Some(sender));
  let scheduled = (|| {
    let set_immediate = super::js::timer_function(js, "setImmediate")?;
    let wake = js
      .closure("mcpNativeNextTurn", move |js, _| {
        executor::complete(js, &sender, ());
        Ok(js.undefined())
      })
      .ok()?;
    js.call(set_immediate, js.undefined(), &[wake]).ok()
  })();
  if scheduled.is_some() {
    let _ = receiver.await;
  }
}

/// Reads a transport's stdout through Bun's stream reader (`Bun.file(fd).stream()`, which
/// leaves the descriptor open for us) while the transport is busy, and for `BUN_IDLE`
/// after. Idle longer, the stream is cancelled and a runtime task only waits for the pipe
/// to become readable (it keeps nothing alive); a notification then starts a stream again.
struct BunReader {
  js: Js,
  side: Shared,
  /// The reader while no stream task holds it.
  parked: RefCell<Option<Box<StdoutReader>>>,
  /// The stream being read, while one is.
  stream: RefCell<Option<Held>>,
  /// The stream was cancelled by us: its end is no end of input.
  cancelling: Cell<bool>,
  busy: Cell<bool>,
  idle_since: Cell<Instant>,
  timer_armed: Cell<bool>,
  watcher: RefCell<Option<tokio::task::AbortHandle>>,
  closed: Cell<bool>,
}

impl BunReader {
  fn start(
    js: Js,
    side: &Shared,
    reader: Box<StdoutReader>,
  ) -> Result<Rc<Self>, Box<StdoutReader>> {
    let Ok(stream) = bun_stream_reader(js, reader.fd()) else {
      return Err(reader);
    };
    let bun = Rc::new(BunReader {
      js,
      side: side.clone(),
      parked: RefCell::new(None),
      stream: RefCell::new(None),
      cancelling: Cell::new(false),
      busy: Cell::new(false),
      idle_since: Cell::new(Instant::now()),
      timer_armed: Cell::new(false),
      watcher: RefCell::new(None),
      closed: Cell::new(false),
    });
    bun.read_stream(stream, reader);
    bun.arm_idle_timer();
    Ok(bun)
  }

  /// Reads `stream` in a task on the JS thread until it ends.
  fn read_stream(self: &Rc<Self>, stream: Value, reader: Box<StdoutReader>) {
    let js = self.js;
    let stream = Held::new(js, stream);
    *self.stream.borrow_mut() = Some(stream.clone());
    let me = self.clone();
    executor::spawn(js, async move {
      let mut feed = Feed::Here(reader);
      loop {
        let mut read = match call_method(js, stream.get(js), "read", &[]) {
          Ok(read) => executor::settled(js, read),
          Err(Thrown(error)) => Box::pin(std::future::ready(Err(Held::new(js, error)))),
        };
        let outcome = loop {
          // Away, the reader comes back as soon as the runtime is done with its line: the
          // chunks it left (sent after the line ended) may hold answers waited for.
          if let Feed::Away(away) = &mut feed {
            match futures::future::select(read, &mut away.back).await {
              Either::Left((outcome, _)) => break outcome,
              Either::Right((returned, pending)) => {
                feed = Feed::arrive(js, &me.side, returned).map_or(Feed::Lost, Feed::Here);
                read = pending;
                continue;
              }
            }
          }
          break read.await;
        };
        let chunk = match &outcome {
          Ok(result) => {
            let result = result.get(js);
            let done = js.get(result, "done").map_or(true, |done| js.truthy(done));
            (!done).then(|| js.get(result, "value").unwrap_or_else(|_| js.undefined()))
          }
          Err(_) => None,
        };
        let Some(chunk) = chunk else {
          // The stream is over: the reader comes home first, whatever it was doing.
          let Some(mut reader) = feed.home(js, &me.side).await else {
            return;
          };
          if me.cancelling.replace(false) {
            // Our own cancel: the pipe is still open; park the reader (or, closed, drop it).
            *me.stream.borrow_mut() = None;
            if me.closed.get() {
              return;
            }
            *me.parked.borrow_mut() = Some(reader);
            if me.busy.get() {
              me.resume();
            } else {
              me.watch();
            }
            return;
          }
          me.collect(|| match &outcome {
            Err(error) => {
              let message = js.error_message(error.get(js));
              reader.end(Some(std::io::Error::other(message)));
            }
            Ok(_) => reader.end(None),
          });
          // End of input: the descriptor closes with the reader.
          *me.stream.borrow_mut() = None;
          return;
        };
        let chunk = Held::new(js, chunk);
        feed = me.take_chunk(feed, &chunk).await;
      }
    });
  }

  /// Runs `feed` (which hands the session what it completes) and delivers it.
  fn collect<T>(&self, feed: impl FnOnce() -> T) -> T {
    pump::read_here(self.js, &self.side, feed)
  }

  /// One chunk from Bun. Its messages are handled a slice at a time, each slice in a loop
  /// turn of its own (Bun hands over all it has read, a megabyte and more in a flood). Once
  /// a long line begins, its bytes go to the runtime, which appends them to the line: the
  /// fresh pages they fill are faulted in there, not on the JS thread.
  async fn take_chunk(&self, feed: Feed, chunk: &Held) -> Feed {
    let js = self.js;
    let mut reader = match feed.back_if_done(js, &self.side) {
      Feed::Here(reader) => reader,
      Feed::Lost => return Feed::Lost,
      away => {
        js.with_bytes(chunk.get(js), |bytes| away.send(bytes));
        return away;
      }
    };
    let length = js.with_bytes(chunk.get(js), <[u8]>::len).unwrap_or(0);
    let mut offset = 0;
    while offset < length {
      if reader.receiving_long_line() {
        let away = Feed::away(js, reader);
        js.with_bytes(chunk.get(js), |bytes| away.send(&bytes[offset..]));
        return away;
      }
      let step = BUN_SLICE_BYTES.min(length - offset);
      self.collect(|| {
        js.with_bytes(chunk.get(js), |bytes| {
          reader.feed(&bytes[offset..offset + step])
        })
      });
      offset += step;
      if offset < length && !reader.receiving_long_line() {
        next_turn(js).await;
      }
    }
    Feed::Here(reader)
  }

  /// Starts a stream for the parked reader, if there is one.
  fn resume(self: &Rc<Self>) {
    if self.closed.get() || self.stream.borrow().is_some() {
      return;
    }
    if let Some(watcher) = self.watcher.borrow_mut().take() {
      watcher.abort();
    }
    let Some(reader) = self.parked.borrow_mut().take() else {
      return;
    };
    match bun_stream_reader(self.js, reader.fd()) {
      Ok(stream) => self.read_stream(stream, reader),
      Err(_) => match crate::runtime::handle() {
        Some(runtime) => drop(crate::transport::stdio::read_on(&runtime, reader)),
        // Dropped unread: to the supervisor, the end of stdout.
        None => drop(reader),
      },
    }
    if !self.busy.get() {
      self.arm_idle_timer();
    }
  }

  /// Waits, on the runtime, for the parked reader's pipe to become readable.
  fn watch(self: &Rc<Self>) {
    if self.closed.get() {
      return;
    }
    let Some(fd) = self.parked.borrow().as_ref().map(|reader| reader.fd()) else {
      return;
    };
    let Some(runtime) = crate::runtime::handle() else {
      return self.resume();
    };
    let ready = runtime.spawn(crate::transport::stdio::readable(fd));
    *self.watcher.borrow_mut() = Some(ready.abort_handle());
    let me = self.clone();
    executor::spawn(self.js, async move {
      // Aborted when a stream started meanwhile; resuming is then a no-op.
      let _ = ready.await;
      me.resume();
    });
  }

  fn set_busy(self: &Rc<Self>, busy: bool) {
    self.busy.set(busy);
    if busy {
      self.resume();
    } else {
      self.idle_since.set(Instant::now());
      self.arm_idle_timer();
    }
  }

  /// One unreferenced timer at a time checks whether the transport has been idle long
  /// enough to let the stream go.
  fn arm_idle_timer(self: &Rc<Self>) {
    if self.closed.get() || self.timer_armed.replace(true) {
      return;
    }
    let js = self.js;
    let left = BUN_IDLE.saturating_sub(self.idle_since.get().elapsed());
    let me = self.clone();
    let armed = (|| {
      let set_timeout = super::js::timer_function(js, "setTimeout")?;
      let check = js
        .closure("mcpNativeIdle", move |js, _| {
          me.timer_armed.set(false);
          me.idle_check();
          Ok(js.undefined())
        })
        .ok()?;
      let delay = js.number(left.as_secs_f64() * 1000.0 + 1.0);
      let timer = js.call(set_timeout, js.undefined(), &[check, delay]).ok()?;
      call_method(js, timer, "unref", &[]).ok()
    })();
    if armed.is_none() {
      self.timer_armed.set(false);
    }
  }

  fn idle_check(self: &Rc<Self>) {
    if self.closed.get() || self.busy.get() {
      return;
    }
    if self.idle_since.get().elapsed() < BUN_IDLE {
      return self.arm_idle_timer();
    }
    self.cancel_stream();
  }

  fn cancel_stream(&self) {
    let stream = self.stream.borrow().clone();
    if let Some(stream) = stream {
      self.cancelling.set(true);
      let _ = call_method(self.js, stream.get(self.js), "cancel", &[]);
    }
  }

  /// For good: the transport closed.
  fn stop(&self) {
    if self.closed.replace(true) {
      return;
    }
    if let Some(watcher) = self.watcher.borrow_mut().take() {
      watcher.abort();
    }
    self.cancel_stream();
    drop(self.parked.borrow_mut().take());
  }
}

/// `Bun.file(fd).stream().getReader()`.
fn bun_stream_reader(js: Js, fd: i32) -> Result<Value, Thrown> {
  let bun = js.get(js.global(), "Bun")?;
  let file = call_method(js, bun, "file", &[js.number(f64::from(fd))])?;
  let stream = call_method(js, file, "stream", &[])?;
  call_method(js, stream, "getReader", &[])
}

/// What the poll handle reads for, released by its close callback.
struct Reading {
  /// `None` while the runtime receives a long line for us.
  reader: Option<Box<StdoutReader>>,
  side: Shared,
}

struct Poller {
  uv: &'static Uv,
  env: sys::napi_env,
  /// The `uv_poll_t`, allocated here; freed when the poller drops, after its close callback.
  handle: *mut c_void,
  layout: std::alloc::Layout,
  reading: RefCell<Option<Reading>>,
  context: Cell<sys::napi_async_context>,
  closing: Cell<bool>,
  in_callback: Cell<bool>,
}

impl Poller {
  fn start(
    js: Js,
    side: &Shared,
    reader: Box<StdoutReader>,
  ) -> Result<Rc<Poller>, Box<StdoutReader>> {
    let Some(uv) = uv() else { return Err(reader) };
    let mut event_loop = ptr::null_mut();
    // SAFETY: env is this JS thread's env; the call only reads it.
    let status = unsafe { sys::napi_get_uv_event_loop(js.env, &mut event_loop) };
    if status != sys::Status::napi_ok || event_loop.is_null() {
      return Err(reader);
    }
    // SAFETY: uv_handle_size has no preconditions.
    let size = unsafe { (uv.handle_size)(UV_POLL) };
    let Ok(layout) = std::alloc::Layout::from_size_align(size.max(1), 16) else {
      return Err(reader);
    };
    // SAFETY: layout has a non-zero size.
    let handle = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<c_void>();
    if handle.is_null() {
      return Err(reader);
    }
    let fd = reader.fd();
    // SAFETY: handle is zeroed memory of uv_poll_t's size; the loop is this thread's; fd is
    // an open, non-blocking descriptor the reader owns until the close callback.
    if unsafe { (uv.poll_init)(event_loop.cast(), handle, fd) } != 0 {
      // SAFETY: allocated above with this layout; libuv did not take the handle.
      unsafe { std::alloc::dealloc(handle.cast(), layout) };
      return Err(reader);
    }
    let mut context = ptr::null_mut();
    // SAFETY: env is live; a null resource makes napi create one.
    unsafe {
      sys::napi_async_init(
        js.env,
        ptr::null_mut(),
        js.string("mcp-native:stdout"),
        &mut context,
      )
    };
    let poller = Rc::new(Poller {
      uv,
      env: js.env,
      handle,
      layout,
      reading: RefCell::new(Some(Reading {
        reader: Some(reader),
        side: side.clone(),
      })),
      context: Cell::new(context),
      closing: Cell::new(false),
      in_callback: Cell::new(false),
    });
    // libuv holds one strong count until the close callback gives it back.
    let data = Rc::into_raw(poller.clone()).cast_mut().cast::<c_void>();
    // SAFETY: handle was initialised by uv_poll_init above; the callbacks match libuv's
    // signatures; the handle does not keep the host alive (pending promises do).
    unsafe {
      (uv.set_data)(handle, data);
      (uv.unref)(handle);
      (uv.poll_start)(handle, UV_READABLE, on_readable);
      sys::napi_add_env_cleanup_hook(js.env, Some(on_teardown), data);
    }
    Ok(poller)
  }

  /// Stops watching; the descriptor closes in the close callback. Idempotent.
  fn stop(&self) {
    if self.closing.replace(true) {
      return;
    }
    let data = (self as *const Poller).cast_mut().cast::<c_void>();
    // SAFETY: the handle is live (not closed yet: `closing` was false); env is this
    // thread's; the hook was registered with exactly this function and data.
    unsafe {
      (self.uv.poll_stop)(self.handle);
      (self.uv.close)(self.handle, on_closed);
      sys::napi_remove_env_cleanup_hook(self.env, Some(on_teardown), data);
    }
    if !self.in_callback.get() {
      self.destroy_context();
    }
  }

  fn destroy_context(&self) {
    let context = self.context.replace(ptr::null_mut());
    if !context.is_null() {
      // SAFETY: created by napi_async_init on this env; destroyed once (nulled above).
      unsafe { sys::napi_async_destroy(self.env, context) };
    }
  }

  /// The descriptor is readable (or in error: the read reports it).
  fn readable(self: &Rc<Self>) {
    let js = Js::new(self.env);
    let mut handle_scope = ptr::null_mut();
    let mut callback_scope = ptr::null_mut();
    self.in_callback.set(true);
    // SAFETY: a libuv callback on the JS thread, outside any other scope: open a handle
    // scope for the values made here and a callback scope, whose close runs the microtasks
    // (promise continuations) the deliveries queue, as a threadsafe function's call would.
    unsafe {
      sys::napi_open_handle_scope(self.env, &mut handle_scope);
      // Node ignores the resource argument: the async context carries it.
      sys::napi_open_callback_scope(
        self.env,
        ptr::null_mut(),
        self.context.get(),
        &mut callback_scope,
      );
    }
    let side = self.reading.borrow().as_ref().map(|r| r.side.clone());
    let read = || {
      let mut reading = self.reading.borrow_mut();
      match reading.as_mut().and_then(|r| r.reader.as_mut()) {
        Some(reader) => (reader.read_ready(), reader.receiving_long_line()),
        None => (Readiness::Ended, false),
      }
    };
    // The borrow ends inside `read`, before the deliveries (which may stop this poller).
    let (readiness, long_line) = match &side {
      Some(side) => pump::read_here(js, side, read),
      None => (Readiness::Ended, false),
    };
    if readiness == Readiness::Ended {
      self.stop();
    } else if long_line {
      self.hand_over_long_line(js);
    }
    // SAFETY: the scopes opened above, closed in reverse order.
    unsafe {
      sys::napi_close_callback_scope(self.env, callback_scope);
      sys::napi_close_handle_scope(self.env, handle_scope);
    }
    self.in_callback.set(false);
    if self.closing.get() {
      self.destroy_context();
    }
  }
}

impl Poller {
  /// A long line has begun: the runtime reads the rest of it (and gives the reader back),
  /// so copying its megabytes and faulting in their fresh pages never blocks the JS thread.
  fn hand_over_long_line(self: &Rc<Self>, js: Js) {
    let reader = self
      .reading
      .borrow_mut()
      .as_mut()
      .and_then(|reading| reading.reader.take());
    let Some(reader) = reader else { return };
    // SAFETY: the handle is live (not closing: `readable` runs only before the close).
    unsafe { (self.uv.poll_stop)(self.handle) };
    let back = executor::on_runtime(js, crate::transport::stdio::read_long_line(reader));
    let me = self.clone();
    executor::spawn(js, async move {
      let reader = back.await.flatten();
      me.take_back(reader);
    });
  }

  /// The runtime is done with a long line: watch the descriptor again, unless the stream
  /// ended meanwhile or the poller is closing (the reader, and its descriptor, then go).
  fn take_back(&self, reader: Option<Box<StdoutReader>>) {
    let Some(reader) = reader else {
      self.stop();
      return;
    };
    if self.closing.get() {
      return;
    }
    if let Some(reading) = self.reading.borrow_mut().as_mut() {
      reading.reader = Some(reader);
      // SAFETY: the handle is live (not closing) and was initialised in `start`.
      unsafe { (self.uv.poll_start)(self.handle, UV_READABLE, on_readable) };
    }
  }
}

impl Drop for Poller {
  fn drop(&mut self) {
    // SAFETY: allocated in `start` with this layout; the close callback has run (libuv's
    // count kept the poller alive until then), so libuv no longer uses the memory.
    unsafe { std::alloc::dealloc(self.handle.cast(), self.layout) };
  }
}

unsafe extern "C" fn on_readable(handle: *mut c_void, _status: c_int, _events: c_int) {
  let Some(uv) = uv() else { return };
  let data = (uv.get_data)(handle) as *const Poller;
  // SAFETY: the data is the Rc<Poller> raw pointer set in `start`, alive until on_closed:
  // this takes one more count of it for the call.
  let poller = unsafe {
    Rc::increment_strong_count(data);
    Rc::from_raw(data)
  };
  let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poller.readable()));
}

unsafe extern "C" fn on_closed(handle: *mut c_void) {
  let Some(uv) = uv() else { return };
  // SAFETY: gives back the strong count handed to libuv in `start`; libuv is done with the
  // handle now.
  let poller = unsafe { Rc::from_raw((uv.get_data)(handle) as *const Poller) };
  // The reader (its descriptor) and the transport's side go with the handle.
  let reading = poller.reading.borrow_mut().take();
  drop(reading);
}

/// The env is going away (a worker ends): its loop must not keep our handle.
unsafe extern "C" fn on_teardown(data: *mut c_void) {
  // SAFETY: data is the poller pointer registered in `start`, alive until on_closed, which
  // cannot have run yet: `stop` removes this hook before the close is requested.
  let poller = unsafe { &*(data as *const Poller) };
  poller.stop();
}
