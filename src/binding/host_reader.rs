//! Reads a stdio server's stdout on the JS thread's own event loop. An answer then wakes
//! the JS thread straight from the pipe, as a hand-written client's
//! `child.stdout.on("data")` would, instead of waking a runtime thread that then wakes the
//! JS thread (two cold wake-ups per answer on an idle machine).
//!
//! Under Node a libuv poll handle watches the descriptor and we read it ourselves. Bun has
//! no `uv_poll_*` (calling it aborts the process), so there Bun's own reader reads it
//! (`Bun.file(fd).stream()`, which leaves the descriptor to us) and we take its chunks.
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use futures::future::{Either, LocalBoxFuture};
use futures::FutureExt;

use super::executor;
use super::host::call_method;
use super::js::{Held, Js, Thrown, Value};
use super::js_side::{HostReaderHooks, Shared};
use super::pump;
use super::uv::{uv, Poll};
use crate::transport::host_stream::{AfterEnd, Fired, StreamPolicy};
use crate::transport::long_line_feed::{LongLineFeed, Returned};
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
        let poll = Watcher::start(self.js, &self.side, reader)?;
        HostReaderHooks {
          stop: Box::new(move || {
            if let Some(poll) = poll.upgrade() {
              poll.stop();
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
  feed: LongLineFeed,
  back: LocalBoxFuture<'static, Option<Returned<Box<StdoutReader>>>>,
}

impl Feed {
  fn away(js: Js, reader: Box<StdoutReader>) -> Feed {
    let (feed, work) = LongLineFeed::start(reader);
    let back = executor::on_runtime(js, work);
    Feed::Away(Away { feed, back })
  }

  /// Passes bytes on to the runtime (a no-op here).
  fn send(&self, bytes: &[u8]) {
    if let Feed::Away(away) = self {
      away.feed.send(bytes);
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
        drop(away.feed);
        Self::arrive(js, side, away.back.await)
      }
      Feed::Lost => None,
    }
  }

  fn arrive(
    js: Js,
    side: &Shared,
    returned: Option<Returned<Box<StdoutReader>>>,
  ) -> Option<Box<StdoutReader>> {
    let returned = returned?;
    Some(pump::read_here(js, side, || returned.feed_left()))
  }
}

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
/// leaves the descriptor open for us) while the transport is busy, and for a while after
/// (the core's `StreamPolicy` decides). Then the stream is cancelled and a runtime task only
/// waits for the pipe to become readable (it keeps nothing alive); a notification then
/// starts a stream again.
struct BunReader {
  js: Js,
  side: Shared,
  /// The reader while no stream task holds it.
  parked: RefCell<Option<Box<StdoutReader>>>,
  /// The stream being read, while one is.
  stream: RefCell<Option<Held>>,
  policy: RefCell<StreamPolicy>,
  watcher: RefCell<Option<tokio::task::AbortHandle>>,
}

impl BunReader {
  fn start(
    js: Js,
    side: &Shared,
    reader: Box<StdoutReader>,
  ) -> Result<Rc<Self>, Box<StdoutReader>> {
    let Some(Ok(stream)) = reader.fd().map(|fd| bun_stream_reader(js, fd)) else {
      return Err(reader);
    };
    let bun = Rc::new(BunReader {
      js,
      side: side.clone(),
      parked: RefCell::new(None),
      stream: RefCell::new(None),
      policy: RefCell::new(StreamPolicy::new(Instant::now())),
      watcher: RefCell::new(None),
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
      // One pair of callbacks for all of this stream's reads, not a new pair per chunk.
      let reads = executor::InTurn::new(js).ok();
      let mut feed = Feed::Here(reader);
      loop {
        let mut read = match call_method(js, stream.get(js), "read", &[]) {
          Ok(read) => match &reads {
            Some(reads) => reads.settled(js, read),
            None => executor::settled(js, read),
          },
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
          let after = me.policy.borrow_mut().stream_ended();
          if after != AfterEnd::Input {
            // Our own cancel: the pipe is still open; park the reader (or, closed, drop it).
            *me.stream.borrow_mut() = None;
            if after == AfterEnd::Drop {
              return;
            }
            *me.parked.borrow_mut() = Some(reader);
            if after == AfterEnd::Resume {
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
    if self.policy.borrow().is_closed() || self.stream.borrow().is_some() {
      return;
    }
    if let Some(watcher) = self.watcher.borrow_mut().take() {
      watcher.abort();
    }
    let Some(reader) = self.parked.borrow_mut().take() else {
      return;
    };
    match reader.fd().map(|fd| bun_stream_reader(self.js, fd)) {
      Some(Ok(stream)) => self.read_stream(stream, reader),
      _ => match crate::runtime::handle() {
        Some(runtime) => drop(crate::transport::stdio::read_on(&runtime, reader)),
        // Dropped unread: to the supervisor, the end of stdout.
        None => drop(reader),
      },
    }
    if !self.policy.borrow().is_busy() {
      self.arm_idle_timer();
    }
  }

  /// Waits, on the runtime, for the parked reader's pipe to become readable.
  fn watch(self: &Rc<Self>) {
    if self.policy.borrow().is_closed() {
      return;
    }
    let Some(fd) = self.parked.borrow().as_ref().and_then(|reader| reader.fd()) else {
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
    let delay = self.policy.borrow_mut().set_busy(busy, Instant::now());
    if busy {
      self.resume();
    } else if let Some(delay) = delay {
      self.start_idle_timer(delay);
    }
  }

  fn arm_idle_timer(self: &Rc<Self>) {
    let delay = self.policy.borrow_mut().arm(Instant::now());
    if let Some(delay) = delay {
      self.start_idle_timer(delay);
    }
  }

  /// An unreferenced timer that asks the policy whether to let the stream go.
  fn start_idle_timer(self: &Rc<Self>, delay: Duration) {
    let js = self.js;
    let me = self.clone();
    let armed = (|| {
      let set_timeout = super::js::timer_function(js, "setTimeout")?;
      let check = js
        .closure("mcpNativeIdle", move |js, _| {
          me.idle_check();
          Ok(js.undefined())
        })
        .ok()?;
      let delay = js.number(delay.as_secs_f64() * 1000.0);
      let timer = js.call(set_timeout, js.undefined(), &[check, delay]).ok()?;
      call_method(js, timer, "unref", &[]).ok()
    })();
    if armed.is_none() {
      self.policy.borrow_mut().disarm();
    }
  }

  fn idle_check(self: &Rc<Self>) {
    let fired = self.policy.borrow_mut().timer_fired(Instant::now());
    match fired {
      Fired::Nothing => {}
      Fired::Rearm(delay) => self.start_idle_timer(delay),
      Fired::Cancel => self.cancel_stream(),
    }
  }

  fn cancel_stream(&self) {
    let stream = self.stream.borrow().clone();
    if let Some(stream) = stream {
      self.policy.borrow_mut().cancelling();
      let _ = call_method(self.js, stream.get(self.js), "cancel", &[]);
    }
  }

  /// For good: the transport closed.
  fn stop(&self) {
    if !self.policy.borrow_mut().close() {
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

/// Node: the reader, fed whenever the loop's poll handle finds its descriptor readable.
struct Watcher {
  poll: RefCell<Weak<Poll>>,
  reading: RefCell<Option<Reading>>,
}

impl Watcher {
  /// Watches the reader's descriptor; the reader comes back when the loop cannot.
  fn start(
    js: Js,
    side: &Shared,
    reader: Box<StdoutReader>,
  ) -> Result<Weak<Poll>, Box<StdoutReader>> {
    let Some(fd) = reader.fd() else {
      return Err(reader);
    };
    let watcher = Rc::new(Watcher {
      poll: RefCell::new(Weak::new()),
      reading: RefCell::new(Some(Reading {
        reader: Some(reader),
        side: side.clone(),
      })),
    });
    let (reads, closes) = (watcher.clone(), watcher.clone());
    let started = Poll::start(
      js,
      fd,
      move |js| reads.readable(js),
      // The reader (its descriptor) and the transport's side go with the handle.
      move || drop(closes.reading.borrow_mut().take()),
    );
    match started {
      Some(poll) => {
        *watcher.poll.borrow_mut() = Rc::downgrade(&poll);
        Ok(Rc::downgrade(&poll))
      }
      None => {
        // A poll that did not start never ran its callbacks: the reader is still here.
        match watcher.reading.borrow_mut().take().and_then(|r| r.reader) {
          Some(reader) => Err(reader),
          None => Ok(Weak::new()),
        }
      }
    }
  }

  fn stop(&self) {
    if let Some(poll) = self.poll.borrow().upgrade() {
      poll.stop();
    }
  }

  /// The descriptor is readable (or in error: the read reports it).
  fn readable(self: &Rc<Self>, js: Js) {
    let side = self.reading.borrow().as_ref().map(|r| r.side.clone());
    let read = || {
      let mut reading = self.reading.borrow_mut();
      match reading.as_mut().and_then(|r| r.reader.as_mut()) {
        Some(reader) => (reader.read_ready(), reader.receiving_long_line()),
        None => (Readiness::Ended, false),
      }
    };
    // The borrow ends inside `read`, before the deliveries (which may stop the poll).
    let (readiness, long_line) = match &side {
      Some(side) => pump::read_here(js, side, read),
      None => (Readiness::Ended, false),
    };
    if readiness == Readiness::Ended {
      self.stop();
    } else if long_line {
      self.hand_over_long_line(js);
    }
  }

  /// A long line has begun: the runtime reads the rest of it (and gives the reader back),
  /// so copying its megabytes and faulting in their fresh pages never blocks the JS thread.
  fn hand_over_long_line(self: &Rc<Self>, js: Js) {
    let reader = self
      .reading
      .borrow_mut()
      .as_mut()
      .and_then(|reading| reading.reader.take());
    let Some(reader) = reader else { return };
    if let Some(poll) = self.poll.borrow().upgrade() {
      poll.pause();
    }
    let back = executor::on_runtime(js, crate::transport::stdio::read_long_line(reader));
    let me = self.clone();
    executor::spawn(js, async move {
      let reader = back.await.flatten();
      me.take_back(reader);
    });
  }

  /// The runtime is done with a long line: watch the descriptor again, unless the stream
  /// ended meanwhile or the poll is closing (the reader, and its descriptor, then go).
  fn take_back(&self, reader: Option<Box<StdoutReader>>) {
    let Some(reader) = reader else {
      self.stop();
      return;
    };
    let Some(poll) = self.poll.borrow().upgrade().filter(|p| !p.is_closing()) else {
      return;
    };
    if let Some(reading) = self.reading.borrow_mut().as_mut() {
      reading.reader = Some(reader);
      poll.resume();
    }
  }
}
