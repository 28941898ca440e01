//! A long line whose bytes the host reads (Bun's stream reader) but whose appending happens
//! on the runtime: the fresh pages the line fills are faulted in there, not on the JS
//! thread. The host sends chunks in order; the runtime feeds them until the line is
//! complete and gives the reader back with the chunks it did not take, which the host then
//! feeds itself, in order. Spent chunk buffers go back to a small pool for the next sends.
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use super::stdio::StdoutReader;

/// What a long line is fed into.
pub trait LineReceiver: Send + 'static {
  fn feed(&mut self, bytes: &[u8]);
  /// Still inside the long line: more bytes belong to the runtime.
  fn receiving_long_line(&self) -> bool;
}

impl LineReceiver for Box<StdoutReader> {
  fn feed(&mut self, bytes: &[u8]) {
    StdoutReader::feed(self, bytes);
  }

  fn receiving_long_line(&self) -> bool {
    StdoutReader::receiving_long_line(self)
  }
}

/// Buffers kept for a long line's chunks: enough to cover the runtime's lag behind Bun.
const POOLED_BUFFERS: usize = 8;

/// The host's end: where chunks go while the runtime has the reader.
pub struct LongLineFeed {
  chunks: UnboundedSender<Vec<u8>>,
  pool: Arc<Mutex<Vec<Vec<u8>>>>,
}

/// The reader back from the runtime, with the chunks it did not take.
pub struct Returned<R> {
  pub reader: R,
  left: UnboundedReceiver<Vec<u8>>,
}

impl<R: LineReceiver> Returned<R> {
  /// Feeds the chunks sent after the line ended, in order, and hands the reader back.
  pub fn feed_left(mut self) -> R {
    while let Ok(bytes) = self.left.try_recv() {
      self.reader.feed(&bytes);
    }
    self.reader
  }
}

impl LongLineFeed {
  /// The host's end, and the work to run on the runtime, which resolves with the reader
  /// once the line is complete (or once the host dropped its end).
  pub fn start<R: LineReceiver>(reader: R) -> (Self, impl Future<Output = Returned<R>> + Send) {
    let (chunks, mut received) = unbounded_channel::<Vec<u8>>();
    let pool = Arc::new(Mutex::new(Vec::new()));
    let recycled = pool.clone();
    let work = async move {
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
      Returned {
        reader,
        left: received,
      }
    };
    (LongLineFeed { chunks, pool }, work)
  }

  /// Passes a copy of `bytes` on, in a pooled buffer when one is spare.
  pub fn send(&self, bytes: &[u8]) {
    let spare = self
      .pool
      .lock()
      .unwrap_or_else(PoisonError::into_inner)
      .pop();
    let mut buffer = spare.unwrap_or_default();
    buffer.extend_from_slice(bytes);
    // The runtime's end is gone only once it returned the reader, with what it left.
    let _ = self.chunks.send(buffer);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// A line receiver: a line is long until its newline arrives.
  struct Line {
    bytes: Vec<u8>,
    newlines: usize,
  }

  impl LineReceiver for Line {
    fn feed(&mut self, bytes: &[u8]) {
      self.bytes.extend_from_slice(bytes);
      self.newlines += bytes.iter().filter(|&&b| b == b'\n').count();
    }

    fn receiving_long_line(&self) -> bool {
      self.newlines == 0
    }
  }

  #[tokio::test]
  async fn the_runtime_takes_the_line_and_the_host_the_rest_in_order() {
    let (feed, work) = LongLineFeed::start(Line {
      bytes: b"{\"a\":\"".to_vec(),
      newlines: 0,
    });
    feed.send(b"xxxx");
    feed.send(b"\"}\n{\"b\"");
    feed.send(b":1}\n");
    let running = tokio::spawn(work);
    let returned = running.await.expect("the feed task");
    feed.send(b"late");
    let line = returned.feed_left();
    assert_eq!(line.bytes, b"{\"a\":\"xxxx\"}\n{\"b\":1}\nlate");
  }

  #[tokio::test]
  async fn buffers_are_reused_and_the_pool_is_bounded() {
    let (feed, work) = LongLineFeed::start(Line {
      bytes: Vec::new(),
      newlines: 0,
    });
    let running = tokio::spawn(work);
    for _ in 0..2 * POOLED_BUFFERS {
      feed.send(&[b'x'; 100]);
      tokio::task::yield_now().await;
    }
    let pooled = feed.pool.lock().map(|pool| pool.len()).unwrap_or(0);
    assert!((1..=POOLED_BUFFERS).contains(&pooled), "{pooled}");
    feed.send(b"\n");
    let line = running.await.expect("the feed task").feed_left();
    assert_eq!(line.bytes.len(), 2 * POOLED_BUFFERS * 100 + 1);
  }

  #[tokio::test]
  async fn a_dropped_host_end_gives_the_reader_back() {
    let (feed, work) = LongLineFeed::start(Line {
      bytes: Vec::new(),
      newlines: 0,
    });
    feed.send(b"partial");
    drop(feed);
    let line = work.await.feed_left();
    assert!(line.receiving_long_line());
    assert_eq!(line.bytes, b"partial");
  }
}
