//! A30/A36: what to do with a resource subscription once its request settles: notifications
//! may have been switched off, or switched off and on again (a new epoch), meanwhile.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostAction {
  /// Notifications are off: undo the subscription.
  Rollback,
  /// A later epoch owns the subscriptions now: leave them alone.
  Ignore,
  Apply,
}

impl PostAction {
  pub fn as_str(self) -> &'static str {
    match self {
      PostAction::Rollback => "rollback",
      PostAction::Ignore => "ignore",
      PostAction::Apply => "apply",
    }
  }
}

/// `resolveSubscriptionPostAction(enabled, currentEpoch, subscriptionEpoch)`.
pub fn post_action(enabled: bool, current_epoch: f64, subscription_epoch: f64) -> PostAction {
  if !enabled {
    PostAction::Rollback
  } else if current_epoch != subscription_epoch {
    PostAction::Ignore
  } else {
    PostAction::Apply
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a30_post_actions() {
    assert_eq!(post_action(false, 1.0, 1.0), PostAction::Rollback);
    assert_eq!(post_action(false, 2.0, 1.0), PostAction::Rollback);
    assert_eq!(post_action(true, 2.0, 1.0), PostAction::Ignore);
    assert_eq!(post_action(true, 3.0, 3.0).as_str(), "apply");
  }
}
