//===- Team.h - the processes one tuning run is shared among ------*- C++ -*-===//
//
// This file declares the team of processes behind `attnc tune`: one process
// on its own, or the ranks of MPI_COMM_WORLD when attnc runs under an MPI
// launcher (`mpirun -np K attnc tune ...`, Debian's OpenMPI). Rank 0 runs
// the search and alone writes the tuning database; every rank compiles and
// measures the candidates rank 0 hands out, a round at a time (Tuner.cpp).
//
// Ranks on the same host compile at the same time but measure in turn
// (`hostTurns`: all of the host's ranks first finish compiling), so there
// is one measuring process per host at any moment and no candidate is
// timed beside another's compile or run.
//
// Everything is text: rank 0 broadcasts a round's jobs as one string, and
// gathers one string (a trial) from each rank. Every call is collective
// over the whole team (or over the host, for hostTurns).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNE_TEAM_H
#define ATTNC_TUNE_TEAM_H

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attnc::tune {

class Team {
public:
  /// Whether this process was started by an MPI launcher (OpenMPI's,
  /// MPICH's or a PMIx one), from the environment the launcher sets.
  static bool launchedByMpi();
  /// The MPI library attnc was built with (`Open MPI v4.1.4`), or "" when
  /// it was built without MPI (ATTNC_MPI).
  static std::string mpiLibrary();

  /// Joins the team: MPI_COMM_WORLD when launched by MPI and built with
  /// it (MPI_Init_thread; one thread calls MPI), otherwise a team of one.
  /// False with `error` set when launched by MPI with several ranks but
  /// built without it.
  bool join(std::string &error);
  /// Leaves the team (MPI_Finalize). Every rank calls it once.
  void leave();
  Team();
  ~Team();

  int rank() const { return myRank; }
  int size() const { return worldSize; }
  /// This rank's place among the ranks on its host, and their number.
  int hostRank() const { return myHostRank; }
  int hostSize() const { return hostRanks; }
  /// How many hosts the team spans.
  int hosts() const { return hostCount; }

  /// Rank 0's `text` on every rank.
  std::string broadcast(const std::string &text);
  /// On rank 0, every rank's `text` in rank order; elsewhere empty.
  std::vector<std::string> gather(const std::string &text);
  /// Whether `ok` holds on every rank.
  bool all(bool ok);
  /// Calls `work` on each rank of this host in turn (hostRank order), the
  /// others of the host waiting: one measuring process per host at a time.
  void hostTurns(const std::function<void()> &work);

private:
  bool mpi = false;
  int myRank = 0, worldSize = 1;
  int myHostRank = 0, hostRanks = 1, hostCount = 1;
  struct Mpi; ///< The host's communicator (Team.cpp).
  std::unique_ptr<Mpi> comms;
};

} // namespace attnc::tune

#endif // ATTNC_TUNE_TEAM_H
