//===- Team.cpp - the processes one tuning run is shared among ------------===//
//
// This file implements Team (Team.h) on MPI where attnc is built with it
// (ATTNC_HAVE_MPI), and as a team of one otherwise. Strings travel as a
// length followed by their bytes; gathers send lengths first (MPI_Gather)
// and then the bytes (MPI_Gatherv).
//
//===----------------------------------------------------------------------===//
#include "tune/Team.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <numeric>

#ifdef ATTNC_HAVE_MPI
// MPI's C API only: OpenMPI's and MPICH's deprecated C++ bindings would
// need their C++ libraries.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace attnc::tune {

namespace {

/// The number of ranks the launcher's environment announces; 0 if none.
int launcherSize() {
  // OpenMPI's mpirun, and MPICH's (Hydra) and other PMI launchers.
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *size = std::getenv(name))
      return std::atoi(size);
  return 0;
}

} // namespace

bool Team::launchedByMpi() {
  return launcherSize() > 0 || std::getenv("PMIX_RANK") ||
         std::getenv("PMI_RANK");
}

std::string Team::mpiLibrary() {
#ifdef ATTNC_HAVE_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, length);
  return version.substr(0, version.find_first_of(",\n"));
#else
  return "";
#endif
}

#ifdef ATTNC_HAVE_MPI

struct Team::Mpi {
  MPI_Comm host = MPI_COMM_NULL;
};

namespace {

/// Waits for `request` without spinning: MPI's blocking calls poll at full
/// speed, which would take a core from a rank measuring on the same host.
/// The poll interval grows from 50 us to 5 ms.
void await(MPI_Request &request) {
  int done = 0;
  for (long pause = 50000;; pause = std::min(pause * 2, 5000000L)) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    timespec delay{0, pause};
    nanosleep(&delay, nullptr);
  }
}

} // namespace

Team::Team() = default;
Team::~Team() { leave(); }

bool Team::join(std::string &error) {
  if (mpi || !launchedByMpi())
    return true;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS) {
    error = "MPI_Init_thread failed";
    return false;
  }
  mpi = true;
  comms = std::make_unique<Mpi>();
  MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, myRank,
                      MPI_INFO_NULL, &comms->host);
  MPI_Comm_rank(comms->host, &myHostRank);
  MPI_Comm_size(comms->host, &hostRanks);
  // The hosts: the ranks that lead one (host rank 0).
  int leads = myHostRank == 0;
  MPI_Allreduce(&leads, &hostCount, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  // A launcher of another MPI than attnc's starts each process as a world
  // of its own: K searches writing one database. Refuse that.
  if (int launched = launcherSize(); launched > 1 && worldSize != launched) {
    error = "attnc was started by an MPI launcher with " +
            std::to_string(launched) + " ranks but joined a world of " +
            std::to_string(worldSize) + " (" + mpiLibrary() +
            "): start it with that MPI's own mpirun";
    return false;
  }
  return true;
}

void Team::leave() {
  if (!mpi)
    return;
  mpi = false;
  if (comms->host != MPI_COMM_NULL)
    MPI_Comm_free(&comms->host);
  MPI_Finalize();
}

std::string Team::broadcast(const std::string &text) {
  if (!mpi)
    return text;
  unsigned long long length = text.size();
  MPI_Request request;
  MPI_Ibcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD, &request);
  await(request);
  std::string received = myRank == 0 ? text : std::string(length, '\0');
  // Chunks below INT_MAX bytes (MPI counts are ints).
  for (size_t at = 0; at < length; at += 1 << 30) {
    int count = int(std::min<size_t>(length - at, 1 << 30));
    MPI_Ibcast(received.data() + at, count, MPI_CHAR, 0, MPI_COMM_WORLD,
               &request);
    await(request);
  }
  return received;
}

std::vector<std::string> Team::gather(const std::string &text) {
  if (!mpi)
    return {text};
  int length = int(text.size());
  std::vector<int> lengths(myRank == 0 ? worldSize : 0);
  MPI_Request request;
  MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0,
              MPI_COMM_WORLD, &request);
  await(request);
  std::vector<int> offsets(lengths.size(), 0);
  std::string all;
  if (myRank == 0) {
    for (size_t i = 1; i < lengths.size(); ++i)
      offsets[i] = offsets[i - 1] + lengths[i - 1];
    all.resize(std::accumulate(lengths.begin(), lengths.end(), size_t(0)));
  }
  MPI_Igatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
               offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD, &request);
  await(request);
  std::vector<std::string> texts;
  for (size_t i = 0; i < lengths.size(); ++i)
    texts.push_back(all.substr(offsets[i], lengths[i]));
  return texts;
}

bool Team::all(bool ok) {
  if (!mpi)
    return ok;
  int mine = ok, every = 0;
  MPI_Request request;
  MPI_Iallreduce(&mine, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD,
                 &request);
  await(request);
  return every != 0;
}

void Team::hostTurns(const std::function<void()> &work) {
  if (!mpi) {
    work();
    return;
  }
  // Every rank of the host first finishes what it did before (compiling),
  // then each measures while the others wait.
  MPI_Request request;
  MPI_Ibarrier(comms->host, &request);
  await(request);
  for (int turn = 0; turn < hostRanks; ++turn) {
    if (turn == myHostRank)
      work();
    MPI_Ibarrier(comms->host, &request);
    await(request);
  }
}

#else // !ATTNC_HAVE_MPI

struct Team::Mpi {};

Team::Team() = default;
Team::~Team() = default;

bool Team::join(std::string &error) {
  if (int size = launcherSize(); size > 1) {
    error = "attnc was started by an MPI launcher with " +
            std::to_string(size) +
            " ranks, but it was built without MPI (configure with Debian's "
            "libopenmpi-dev installed and -DATTNC_MPI=ON)";
    return false;
  }
  return true;
}

void Team::leave() {}
std::string Team::broadcast(const std::string &text) { return text; }
std::vector<std::string> Team::gather(const std::string &text) {
  return {text};
}
bool Team::all(bool ok) { return ok; }
void Team::hostTurns(const std::function<void()> &work) { work(); }

#endif // ATTNC_HAVE_MPI

} // namespace attnc::tune
