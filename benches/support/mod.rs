pub mod pi_stream;
