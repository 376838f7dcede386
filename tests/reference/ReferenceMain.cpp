//===- ReferenceMain.cpp - attnc-reference: the fp64 reference as a tool --===//
//
// attnc-reference FILE.attn [--model NAME] [--weights W.safetensors]
//                 --input NAME=X.npy ... --output NAME=Y.npy ...
//
// Evaluates a model of an .attn file (its layer-level IR, as imported) with
// the fp64 reference interpreter on .npy inputs and safetensors weights,
// and writes the outputs as float32 .npy files (the fp64 result rounded
// once). It is test code: the Python module's tests (tests/python) judge
// the module's numerics with it, as the GoogleTest suites do in-process.
// Exit status 1 with a message on any error.
//
//===----------------------------------------------------------------------===//
#include "driver/Session.h"
#include "runtime/Npy.h"
#include "runtime/Safetensors.h"
#include "tests/reference/Interpreter.h"

#include "llvm/Support/raw_ostream.h"

#include <iostream>

using namespace attnc;

static int fail(const std::string &message) {
  std::cerr << "attnc-reference: error: " << message << "\n";
  return 1;
}

static bool split(const std::string &text, std::string &name,
                  std::string &path) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  name = text.substr(0, eq);
  path = text.substr(eq + 1);
  return true;
}

int main(int argc, char **argv) {
  std::string file, model, weightsFile;
  std::map<std::string, std::string> inputFiles, outputFiles;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool hasValue = i + 1 < argc;
    std::string name, path;
    if (arg == "--model" && hasValue)
      model = argv[++i];
    else if (arg == "--weights" && hasValue)
      weightsFile = argv[++i];
    else if (arg == "--input" && hasValue && split(argv[i + 1], name, path))
      inputFiles[name] = path, ++i;
    else if (arg == "--output" && hasValue && split(argv[i + 1], name, path))
      outputFiles[name] = path, ++i;
    else if (file.empty() && arg[0] != '-')
      file = arg;
    else
      return fail("unexpected argument '" + arg +
                  "'; usage: attnc-reference FILE.attn [--model NAME] "
                  "[--weights W.safetensors] --input NAME=X.npy ... "
                  "--output NAME=Y.npy ...");
  }
  driver::Session session({model}, llvm::errs());
  if (!session.loadFile(file))
    return 1;
  mlir::func::FuncOp func = driver::findModel(session.module(), model);
  if (!func)
    return 1;

  ref::WeightMap weights;
  if (!weightsFile.empty()) {
    runtime::SafetensorsFile contents;
    runtime::Result read = runtime::readSafetensors(weightsFile, contents);
    if (!read.ok())
      return fail(read.message);
    for (const runtime::SafetensorsTensor &t : contents.tensors)
      weights[t.name] = ref::Tensor::fromFloat(t.shape, t.data);
  }
  // Inputs in the order of the function's arguments, by their attn.name.
  std::vector<ref::Tensor> inputs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto attr = func.getArgAttrOfType<mlir::StringAttr>(i, "attn.name");
    std::string name = attr ? attr.str() : "";
    auto it = inputFiles.find(name);
    if (it == inputFiles.end())
      return fail("no --input for the model's input '" + name + "'");
    runtime::HostTensor t;
    runtime::Result read = runtime::readNpy(it->second, t);
    if (!read.ok())
      return fail(read.message);
    inputs.push_back(t.dtype == "i32"
                         ? ref::Tensor::fromInt32Bits(t.shape, t.data)
                         : ref::Tensor::fromFloat(t.shape, t.data));
  }
  std::vector<ref::Tensor> outputs;
  try {
    outputs = ref::evaluate(func, inputs, weights);
  } catch (const std::exception &e) {
    return fail(e.what());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto attr = func.getResultAttrOfType<mlir::StringAttr>(unsigned(i), "attn.name");
    std::string name = attr ? attr.str() : "";
    auto it = outputFiles.find(name);
    if (it == outputFiles.end())
      continue;
    std::vector<float> values(outputs[i].data.begin(), outputs[i].data.end());
    runtime::Result written =
        runtime::writeNpy(it->second, outputs[i].shape, values.data());
    if (!written.ok())
      return fail(written.message);
  }
  return 0;
}
