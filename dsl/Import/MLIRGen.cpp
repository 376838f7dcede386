//===- MLIRGen.cpp - .attn AST to the attn dialect ------------------------===//
//
// This file implements the importer: models become `func.func`s carrying
// the attn.model / attn.runtime_dims / attn.name / attn.dims attributes,
// params become `attn.weight`s, expressions become attn ops (layer templates
// stay at layer level; attn-expand-layers lowers them), and attention scores
// become `score` regions of arith/math scalar code.
//
//===----------------------------------------------------------------------===//
#include "dsl/Import/MLIRGen.h"

#include "dsl/IR/AttnDialect.h"
#include "dsl/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <map>

namespace attnc::dsl {

namespace attn = mlir::attn;
using mlir::Value;

namespace {

/// Values of the score region's block arguments, converted lazily to f32.
struct ScoreScope {
  Value qk, i, j, n;
  Value iF, jF, nF;
};

class Importer {
public:
  Importer(mlir::MLIRContext &context, const FileAST &file,
           const llvm::SourceMgr &sourceMgr)
      : context(context), builder(&context), file(file), sourceMgr(sourceMgr) {}

  mlir::OwningOpRef<mlir::ModuleOp>
  run(const std::vector<CheckedModel> &models) {
    module = mlir::ModuleOp::create(loc(llvm::SMLoc()));
    for (const CheckedModel &model : models)
      importModel(model);
    return std::move(module);
  }

private:
  mlir::Location loc(llvm::SMLoc where) {
    if (!where.isValid() || !sourceMgr.FindBufferContainingLoc(where))
      return mlir::FileLineColLoc::get(&context, file.fileName, 0, 0);
    auto [line, col] = sourceMgr.getLineAndColumn(where);
    return mlir::FileLineColLoc::get(&context, file.fileName, line, col);
  }

  mlir::Type elementType(const std::string &dtype) {
    if (dtype == "f16")
      return builder.getF16Type();
    if (dtype == "bf16")
      return builder.getBF16Type();
    if (dtype == "i32")
      return builder.getI32Type(); // token ids
    return builder.getF32Type();
  }

  mlir::RankedTensorType tensorType(const TensorType &type) {
    llvm::SmallVector<int64_t> shape;
    for (const Dim &dim : type.shape)
      shape.push_back(dim.isStatic() ? dim.size : mlir::ShapedType::kDynamic);
    return mlir::RankedTensorType::get(shape, elementType(type.dtype));
  }

  mlir::ArrayAttr dimNames(const TensorType &type) {
    llvm::SmallVector<mlir::Attribute> names;
    for (const Dim &dim : type.shape)
      names.push_back(builder.getStringAttr(dim.runtime));
    return builder.getArrayAttr(names);
  }

  mlir::DictionaryAttr tensorAttrs(const DeclaredTensor &tensor) {
    return builder.getDictionaryAttr(
        {builder.getNamedAttr("attn.name", builder.getStringAttr(tensor.name)),
         builder.getNamedAttr("attn.dims", dimNames(tensor.type))});
  }

  void importModel(const CheckedModel &model);
  void importBinding(const Binding &bind);
  Value genTensor(const Expr &expr);
  Value genScalarAsTensor(double value, mlir::Type elementType,
                          llvm::SMLoc where);
  Value genBinary(const Expr &expr);
  Value genCall(const Expr &call);
  Value genLayer(const Expr &call, const std::string &layerName, Value input);
  Value genAttention(const Expr &call);
  Value genScore(const Expr &expr, ScoreScope &scope);
  Value scoreIndexAsFloat(Value index, Value &cache, mlir::Location where);

  mlir::IntegerAttr i64(int64_t value) { return builder.getI64IntegerAttr(value); }
  mlir::FloatAttr f64(double value) { return builder.getF64FloatAttr(value); }
  mlir::BoolAttr boolean(bool value) { return builder.getBoolAttr(value); }

  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  const FileAST &file;
  const llvm::SourceMgr &sourceMgr;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::map<std::string, Value> values;
  std::map<std::string, size_t> outputIndex;
  llvm::SmallVector<Value> outputs;
};

void Importer::importModel(const CheckedModel &model) {
  const ModelAST &ast = *model.ast;
  values.clear();
  outputIndex.clear();
  outputs.assign(model.outputs.size(), Value());

  llvm::SmallVector<mlir::Type> argTypes, resultTypes;
  for (const DeclaredTensor &in : model.inputs)
    argTypes.push_back(tensorType(in.type));
  for (const DeclaredTensor &out : model.outputs)
    resultTypes.push_back(tensorType(out.type));

  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<mlir::func::FuncOp>(
      loc(ast.name.loc), ast.name.name,
      builder.getFunctionType(argTypes, resultTypes));
  func->setAttr("attn.model", builder.getUnitAttr());
  llvm::SmallVector<mlir::NamedAttribute> runtimeDims;
  for (const RuntimeDim &dim : model.runtimeDims)
    runtimeDims.push_back(builder.getNamedAttr(
        dim.name,
        builder.getStringAttr(dim.kind == RuntimeDimKind::Seq ? "seq" : "batch")));
  func->setAttr("attn.runtime_dims", builder.getDictionaryAttr(runtimeDims));
  for (size_t i = 0; i < model.inputs.size(); ++i)
    func.setArgAttrs(i, tensorAttrs(model.inputs[i]));
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    func.setResultAttrs(i, tensorAttrs(model.outputs[i]));
    outputIndex[model.outputs[i].name] = i;
  }

  mlir::Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  for (size_t i = 0; i < model.inputs.size(); ++i)
    values[model.inputs[i].name] = entry->getArgument(i);

  for (const Stmt &stmt : ast.stmts) {
    if (stmt.kind == Stmt::Kind::Tensor) {
      const TensorDecl &decl = stmt.tensor;
      if (decl.role == TensorRole::Param) {
        for (const DeclaredTensor &param : model.params)
          if (param.name == decl.name.name)
            values[param.name] = builder.create<attn::WeightOp>(
                loc(decl.name.loc), tensorType(param.type),
                builder.getStringAttr(param.name));
      } else if (decl.role == TensorRole::Output && decl.init) {
        outputs[outputIndex.at(decl.name.name)] = genTensor(*decl.init);
        values[decl.name.name] = outputs[outputIndex.at(decl.name.name)];
      }
    } else if (stmt.kind == Stmt::Kind::Bind) {
      importBinding(stmt.bind);
    }
  }
  builder.create<mlir::func::ReturnOp>(loc(ast.endLoc), outputs);
}

void Importer::importBinding(const Binding &bind) {
  const Expr &value = *bind.value;
  if (value.sema->kind == ValueKind::Tuple) {
    // split(x, [sizes]) bound to several names.
    Value x = genTensor(*value.operands[0]);
    llvm::SmallVector<mlir::Type> types;
    llvm::SmallVector<int64_t> sizes;
    for (const TensorType &part : value.sema->tuple) {
      types.push_back(tensorType(part));
      sizes.push_back(part.shape.back().size);
    }
    auto split = builder.create<attn::SplitOp>(
        loc(value.loc), types, x, builder.getDenseI64ArrayAttr(sizes));
    for (size_t i = 0; i < bind.names.size(); ++i)
      values[bind.names[i].name] = split->getResult(i);
    return;
  }
  Value result = genTensor(value);
  const std::string &name = bind.names[0].name;
  values[name] = result;
  auto it = outputIndex.find(name);
  if (it != outputIndex.end())
    outputs[it->second] = result;
}

Value Importer::genScalarAsTensor(double value, mlir::Type elementType,
                                  llvm::SMLoc where) {
  return builder.create<attn::ConstantOp>(
      loc(where), mlir::RankedTensorType::get({}, elementType), f64(value));
}

Value Importer::genTensor(const Expr &expr) {
  const SemaInfo &info = *expr.sema;
  mlir::Location where = loc(expr.loc);
  mlir::Type type = tensorType(info.type);
  switch (expr.kind) {
  case ExprKind::Name:
    return values.at(expr.name);
  case ExprKind::Unary:
    return builder.create<attn::NegOp>(where, type,
                                       genTensor(*expr.operands[0]));
  case ExprKind::Binary:
    return genBinary(expr);
  case ExprKind::Index:
    return builder.create<attn::RowOp>(where, type,
                                       genTensor(*expr.operands[0]),
                                       i64(info.config.at("index").size));
  case ExprKind::Transpose:
    return builder.create<attn::TransposeOp>(where, type,
                                             genTensor(*expr.operands[0]));
  case ExprKind::Call:
    return genCall(expr);
  case ExprKind::Repeat: {
    Value x = genTensor(*expr.operands[1]->operands[0]);
    for (const std::string &layer : info.layerNames)
      x = genLayer(*expr.operands[1], layer, x);
    return x;
  }
  default:
    break;
  }
  llvm_unreachable("sema admits no other tensor expressions");
}

Value Importer::genBinary(const Expr &expr) {
  const SemaInfo &info = *expr.sema;
  mlir::Location where = loc(expr.loc);
  mlir::Type type = tensorType(info.type);
  auto operand = [&](const Expr &side) {
    return side.sema->kind == ValueKind::Number
               ? genScalarAsTensor(side.sema->number,
                                   elementType(info.type.dtype), side.loc)
               : genTensor(side);
  };
  Value lhs = operand(*expr.operands[0]);
  Value rhs = operand(*expr.operands[1]);
  switch (expr.op) {
  case '+': return builder.create<attn::AddOp>(where, type, lhs, rhs);
  case '-': return builder.create<attn::SubOp>(where, type, lhs, rhs);
  case '*': return builder.create<attn::MulOp>(where, type, lhs, rhs);
  case '/': return builder.create<attn::DivOp>(where, type, lhs, rhs);
  case '^': return builder.create<attn::PowOp>(where, type, lhs, rhs);
  case '@': return builder.create<attn::MatmulOp>(where, type, lhs, rhs);
  }
  llvm_unreachable("unknown binary operator");
}

template <typename OpT>
static Value unary(mlir::OpBuilder &builder, mlir::Location where,
                   mlir::Type type, Value x) {
  return builder.create<OpT>(where, type, x);
}

Value Importer::genCall(const Expr &call) {
  const SemaInfo &info = *call.sema;
  mlir::Location where = loc(call.loc);
  const std::string &name = call.name;
  if (!info.layerNames.empty())
    return genLayer(call, info.layerNames.front(), genTensor(*call.operands[0]));
  mlir::Type type = tensorType(info.type);
  llvm::SmallVector<Value> args;
  for (const ExprPtr &arg : call.operands)
    if (arg->kind != ExprKind::List)
      args.push_back(genTensor(*arg));
  auto eps = [&] { return f64(info.config.at("eps").number); };
  if (name == "silu") return unary<attn::SiluOp>(builder, where, type, args[0]);
  if (name == "gelu") return unary<attn::GeluOp>(builder, where, type, args[0]);
  if (name == "relu") return unary<attn::ReluOp>(builder, where, type, args[0]);
  if (name == "sigmoid") return unary<attn::SigmoidOp>(builder, where, type, args[0]);
  if (name == "exp") return unary<attn::ExpOp>(builder, where, type, args[0]);
  if (name == "tanh") return unary<attn::TanhOp>(builder, where, type, args[0]);
  if (name == "sqrt") return unary<attn::SqrtOp>(builder, where, type, args[0]);
  if (name == "transpose")
    return builder.create<attn::TransposeOp>(where, type, args[0]);
  if (name == "layer_norm")
    return builder.create<attn::LayerNormOp>(
        where, type, args[0], args.size() > 1 ? args[1] : Value(),
        args.size() > 2 ? args[2] : Value(), eps());
  if (name == "rms_norm")
    return builder.create<attn::RmsNormOp>(
        where, type, args[0], args.size() > 1 ? args[1] : Value(), eps());
  if (name == "scale_norm")
    return builder.create<attn::ScaleNormOp>(
        where, type, args[0], args[1], eps(),
        boolean(info.config.at("clamp").boolean));
  if (name == "embedding")
    return builder.create<attn::EmbeddingOp>(where, type, args[0], args[1]);
  if (name == "sinusoidal")
    return builder.create<attn::SinusoidalOp>(
        where, type, args[0], f64(info.config.at("base").number));
  if (name == "scale_offset")
    return builder.create<attn::ScaleOffsetOp>(where, type, args[0], args[1],
                                               args[2]);
  if (name == "rope")
    return builder.create<attn::RopeOp>(
        where, type, args[0],
        attn::RopeModeAttr::get(&context, *attn::symbolizeRopeMode(
                                              info.config.at("mode").enumValue)),
        i64(info.config.at("dims").size), f64(info.config.at("base").number));
  if (name == "linear_attention")
    return builder.create<attn::LinearAttnOp>(
        where, type, args[0], args[1], args[2],
        attn::FeatureMapAttr::get(&context,
                                  *attn::symbolizeFeatureMap(
                                      info.config.at("feature").enumValue)),
        boolean(info.config.at("causal").boolean),
        boolean(info.config.at("normalize").boolean),
        f64(info.config.at("scale").number));
  if (name == "attention")
    return genAttention(call);
  llvm_unreachable("sema admits no other calls");
}

Value Importer::genLayer(const Expr &call, const std::string &layerName,
                         Value input) {
  const Config &config = call.sema->config;
  mlir::Location where = loc(call.loc);
  mlir::Type type = input.getType();
  auto size = [&](const char *key) { return i64(config.at(key).size); };
  auto flag = [&](const char *key) { return boolean(config.at(key).boolean); };
  auto norm = [&] {
    return attn::NormKindAttr::get(
        &context, *attn::symbolizeNormKind(config.at("norm").enumValue));
  };
  auto relPos = [&] {
    return attn::RelPosKindAttr::get(
        &context, *attn::symbolizeRelPosKind(config.at("rel_pos").enumValue));
  };
  mlir::StringAttr layer = builder.getStringAttr(layerName);
  mlir::FloatAttr eps = f64(config.at("eps").number);
  const std::string &name = call.name;
  // FLASH-pytorch's options of gau and flash (0 rope_dims: all of s).
  auto ropeDims = [&] {
    auto it = config.find("rope_dims");
    return i64(it == config.end() ? 0 : it->second.size);
  };
  auto ropeMode = [&] {
    return attn::RopeModeAttr::get(
        &context, *attn::symbolizeRopeMode(config.at("rope_mode").enumValue));
  };
  if (name == "gau")
    return builder.create<attn::GauOp>(
        where, type, input, layer, size("e"), size("s"), flag("causal"),
        norm(), size("max_len"), relPos(), flag("rope"), eps,
        size("num_buckets"), size("max_distance"), ropeDims(), ropeMode(),
        flag("shift_tokens"), flag("norm_clamp"));
  if (name == "flash")
    return builder.create<attn::FlashOp>(
        where, type, input, layer, size("e"), size("s"), size("chunk"),
        flag("causal"), norm(), relPos(), flag("rope"), eps,
        size("num_buckets"), size("max_distance"), ropeDims(), ropeMode(),
        flag("shift_tokens"), flag("norm_clamp"),
        boolean(config.at("lin_scale").enumValue == "length"));
  if (name == "mhsa")
    return builder.create<attn::MhsaOp>(where, type, input, layer,
                                        size("heads"), flag("causal"), norm(),
                                        eps);
  if (name == "linear_attention")
    return builder.create<attn::LinearAttentionOp>(
        where, type, input, layer, size("heads"), flag("causal"),
        attn::FeatureMapAttr::get(
            &context, *attn::symbolizeFeatureMap(config.at("feature").enumValue)),
        norm(), eps);
  if (name == "local_attention")
    return builder.create<attn::LocalAttentionOp>(
        where, type, input, layer, size("heads"), size("window"),
        flag("causal"), flag("block"), norm(), eps);
  if (name == "glu_ffn")
    return builder.create<attn::GluFfnOp>(
        where, type, input, layer, size("hidden"),
        attn::ActivationAttr::get(
            &context,
            *attn::symbolizeActivation(config.at("activation").enumValue)),
        norm(), eps);
  llvm_unreachable("unknown layer template");
}

Value Importer::genAttention(const Expr &call) {
  const SemaInfo &info = *call.sema;
  mlir::Location where = loc(call.loc);
  Value q = genTensor(*call.operands[0]);
  Value k = genTensor(*call.operands[1]);
  Value v = genTensor(*call.operands[2]);
  const ConfigValue &mask = info.config.at("mask");
  auto maskAttr = attn::MaskAttr::get(
      &context, *attn::symbolizeMaskKind(mask.enumValue), mask.maskSize);
  auto normalize = attn::NormalizeAttr::get(
      &context, *attn::symbolizeNormalize(info.config.at("normalize").enumValue));
  auto op = builder.create<attn::AttentionOp>(
      where, tensorType(info.type), q, k, v, maskAttr, normalize,
      i64(info.config.at("heads").size));
  mlir::Block *block = op.addScoreBlock();
  mlir::OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(block);
  ScoreScope scope;
  scope.qk = block->getArgument(0);
  scope.i = block->getArgument(1);
  scope.j = block->getArgument(2);
  scope.n = block->getArgument(3);
  const KeywordArg *score = call.findKeyword("score");
  Value result = score ? genScore(*score->value, scope) : scope.qk;
  builder.create<attn::YieldOp>(score ? loc(score->value->loc) : where, result);
  return op;
}

Value Importer::scoreIndexAsFloat(Value index, Value &cache,
                                  mlir::Location where) {
  if (!cache) {
    Value asInt = builder.create<mlir::arith::IndexCastOp>(
        where, builder.getI64Type(), index);
    cache = builder.create<mlir::arith::SIToFPOp>(where, builder.getF32Type(),
                                                  asInt);
  }
  return cache;
}

Value Importer::genScore(const Expr &expr, ScoreScope &scope) {
  const SemaInfo &info = *expr.sema;
  mlir::Location where = loc(expr.loc);
  mlir::Type f32 = builder.getF32Type();
  auto constant = [&](double value) -> Value {
    return builder.create<mlir::arith::ConstantOp>(
        where, builder.getF32FloatAttr(static_cast<float>(value)));
  };
  if (info.kind == ValueKind::Number)
    return constant(info.number);
  switch (expr.kind) {
  case ExprKind::Name:
    if (info.scoreVar == "qk") return scope.qk;
    if (info.scoreVar == "i") return scoreIndexAsFloat(scope.i, scope.iF, where);
    if (info.scoreVar == "j") return scoreIndexAsFloat(scope.j, scope.jF, where);
    return scoreIndexAsFloat(scope.n, scope.nF, where);
  case ExprKind::Unary:
    return builder.create<mlir::arith::NegFOp>(where,
                                               genScore(*expr.operands[0], scope));
  case ExprKind::Binary: {
    Value lhs = genScore(*expr.operands[0], scope);
    if (expr.op == '^') {
      double exponent = expr.operands[1]->sema->number;
      if (exponent == 2)
        return builder.create<mlir::arith::MulFOp>(where, lhs, lhs);
      if (exponent == 1)
        return lhs;
      return builder.create<mlir::math::PowFOp>(where, lhs, constant(exponent));
    }
    Value rhs = genScore(*expr.operands[1], scope);
    switch (expr.op) {
    case '+': return builder.create<mlir::arith::AddFOp>(where, lhs, rhs);
    case '-': return builder.create<mlir::arith::SubFOp>(where, lhs, rhs);
    case '*': return builder.create<mlir::arith::MulFOp>(where, lhs, rhs);
    case '/': return builder.create<mlir::arith::DivFOp>(where, lhs, rhs);
    }
    break;
  }
  case ExprKind::Call: {
    const std::string &name = expr.name;
    if (name == "rel_pos_bias")
      return builder.create<attn::RelPosBiasOp>(
          where, f32, values.at(expr.operands[0]->name), scope.i, scope.j,
          i64(info.config.at("max_len").size));
    if (name == "t5_bias")
      return builder.create<attn::T5BiasOp>(
          where, f32, values.at(expr.operands[0]->name), scope.i, scope.j,
          boolean(info.config.at("causal").boolean),
          i64(info.config.at("num_buckets").size),
          i64(info.config.at("max_distance").size),
          f64(info.config.at("scale").number));
    Value x = genScore(*expr.operands[0], scope);
    auto sigmoid = [&](Value v) -> Value {
      Value e = builder.create<mlir::math::ExpOp>(
          where, builder.create<mlir::arith::NegFOp>(where, v));
      Value one = constant(1.0);
      return builder.create<mlir::arith::DivFOp>(
          where, one, builder.create<mlir::arith::AddFOp>(where, one, e));
    };
    if (name == "relu")
      return builder.create<mlir::arith::MaximumFOp>(where, x, constant(0.0));
    if (name == "exp") return builder.create<mlir::math::ExpOp>(where, x);
    if (name == "tanh") return builder.create<mlir::math::TanhOp>(where, x);
    if (name == "sqrt") return builder.create<mlir::math::SqrtOp>(where, x);
    if (name == "sigmoid") return sigmoid(x);
    if (name == "silu")
      return builder.create<mlir::arith::MulFOp>(where, x, sigmoid(x));
    if (name == "gelu") {
      Value scaled = builder.create<mlir::arith::MulFOp>(
          where, x, constant(0.70710678118654752440));
      Value erf = builder.create<mlir::math::ErfOp>(where, scaled);
      Value onePlus = builder.create<mlir::arith::AddFOp>(where, constant(1.0), erf);
      Value half = builder.create<mlir::arith::MulFOp>(where, x, constant(0.5));
      return builder.create<mlir::arith::MulFOp>(where, half, onePlus);
    }
    break;
  }
  default:
    break;
  }
  llvm_unreachable("sema admits no other score expressions");
}

} // namespace

void registerImportDialects(mlir::DialectRegistry &registry) {
  registry.insert<attn::AttnDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect>();
}

mlir::OwningOpRef<mlir::ModuleOp>
importModels(mlir::MLIRContext &context, const FileAST &file,
             const std::vector<CheckedModel> &models,
             const llvm::SourceMgr &sourceMgr) {
  context.loadDialect<attn::AttnDialect, mlir::func::FuncDialect,
                      mlir::arith::ArithDialect, mlir::math::MathDialect>();
  Importer importer(context, file, sourceMgr);
  mlir::OwningOpRef<mlir::ModuleOp> module = importer.run(models);
  if (mlir::failed(mlir::verify(*module))) {
    mlir::emitError(module->getLoc())
        << "internal error: the imported IR does not verify (a bug in attnc; "
           "please report it with the .attn file)";
    return nullptr;
  }
  return module;
}

} // namespace attnc::dsl
