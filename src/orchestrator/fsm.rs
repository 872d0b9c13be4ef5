//! pure FSM
